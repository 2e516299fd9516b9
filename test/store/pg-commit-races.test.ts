import pg from "pg";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/messages.js";
import { abortedOutcome, toolResultMessage } from "../../src/agent/tool-results.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import { isConflict } from "../../src/store/errors.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import type { RunInput, Store } from "../../src/store/store.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { until } from "../helpers/until.js";

let database: TestPgDatabase;
let store: Store;
let taker: pg.Client;
let watcher: pg.Client;
beforeEach(async () => {
  database = await createTestPgDatabase();
  store = await openPgStore({ url: database.url, maxConnections: 4 });
  taker = new pg.Client({ connectionString: database.url });
  watcher = new pg.Client({ connectionString: database.url });
  await taker.connect();
  await watcher.connect();
});
afterEach(async () => {
  await taker?.end();
  await watcher?.end();
  await store?.close();
  await database?.drop();
});

/** Until exactly one statement of this database waits for a lock another transaction holds. */
const untilOneWaitsOnLock = (what: string) =>
  until(
    async () =>
      (
        await watcher.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
      ).rowCount,
    (waiting) => waiting === 1,
    what,
  );

/**
 * A keyed steer's retry carries the input's id again (it comes from the key). Sent at the
 * instant the run takes that input (its commit: the run's fence, the input's delete, its user
 * message), under READ COMMITTED the retry's insert could see neither the message (not yet
 * committed when its snapshot was taken) nor the input (deleted once the take committed, which
 * its ON CONFLICT waited for): the input pending again, and taken as a second user message.
 */
it("PostgreSQL: a steer's retry sent while the run commits taking that input does not add it again", async () => {
  const sessionId = "ses_steerrace";
  const runId = "run_steerrace";
  await seedSession(store, { id: sessionId });
  const owner = "inst_steerrace";
  await store.runs.create(
    runRecord({ id: runId, sessionId }),
    [{ type: "run.started", runId, seq: 1, at: new Date().toISOString() }],
    { lease: { owner, ttlMs: 3_600_000 } },
  );
  const input: RunInput = { id: "msg_steerrace", runId, content: "also this", createdAt: new Date().toISOString() };
  expect(await store.inputs.add(input)).toBe(true);

  // The run's commit taking the input, in progress.
  await taker.query("BEGIN");
  await taker.query("UPDATE runs SET epoch = epoch WHERE id = $1 AND owner_instance = $2", [runId, owner]);
  await taker.query("DELETE FROM run_inputs WHERE id = $1 AND run_id = $2", [input.id, runId]);
  await taker.query(
    `INSERT INTO messages (id, session_id, run_id, seq, role, content, created_at)
     VALUES ($1, $2, $3, 2, 'user', $4, $5)`,
    [input.id, sessionId, runId, input.content, input.createdAt],
  );
  const retry = store.inputs.add(input);
  retry.catch(() => {});
  await untilOneWaitsOnLock("the retry to wait for the take");
  await taker.query("COMMIT");

  expect(await retry).toBe(false);
  expect(await store.inputs.pending(runId)).toEqual([]);
});

/**
 * Another instance's start stores its run in a transaction still open when the delete's
 * statement begins. Under READ COMMITTED a delete that checked for unfinished runs in its own
 * statement would not see that run (its snapshot predates the insert's commit, which it waits
 * for on the session row) and would cascade it while its loop runs.
 */
it("PostgreSQL: a run stored by a transaction the delete waits for is seen, and the session is not deleted under it", async () => {
  const sessionId = "ses_deleterace";
  await seedSession(store, { id: sessionId });
  await taker.query("BEGIN");
  await taker.query(
    `INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at)
     VALUES ('run_deleterace', $1, 'running', 'go', 5, '{}', $2)`,
    [sessionId, new Date().toISOString()],
  );
  const deleting = store.sessions.delete(sessionId);
  deleting.catch(() => {});
  await untilOneWaitsOnLock("the delete to wait for the run's insert");
  await taker.query("COMMIT");

  await expect(deleting).rejects.toSatisfy((err) => isConflict(err, "active_run"));
  expect(await store.sessions.get(sessionId)).not.toBeNull();
  expect((await watcher.query("SELECT status FROM runs WHERE id = 'run_deleterace'")).rows).toEqual([
    { status: "running" },
  ]);
});

/**
 * A queued run that takes a finished run's left-over steered input, stored while the session
 * is being deleted. The delete locks the session row, then its cascade reaches the input; a
 * run insert that deleted the input first and then met the session's lock held the two in the
 * opposite order, and PostgreSQL aborted one of them (deadlock detected).
 */
it("PostgreSQL: a queued run taking left-over input while its session is deleted meets no session, with no deadlock", async () => {
  const sessionId = "ses_leftinput";
  const finishedRun = "run_leftinput_1";
  await seedSession(store, { id: sessionId });
  await store.runs.create(runRecord({ id: finishedRun, sessionId }), [
    { type: "run.started", runId: finishedRun, seq: 1, at: new Date().toISOString() },
  ]);
  const left: RunInput = {
    id: "msg_leftinput",
    runId: finishedRun,
    content: "left",
    createdAt: new Date().toISOString(),
  };
  expect(await store.inputs.add(left)).toBe(true);
  await store.commitRun(finishedRun, [finishChange()], []);

  // The delete in progress, as the store's delete sends it: the session row locked first.
  await taker.query("BEGIN");
  await taker.query("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", [sessionId]);
  const queuedRun = "run_leftinput_2";
  const queuing = store.runs.create(
    runRecord({ id: queuedRun, sessionId, status: "queued" }),
    [{ type: "run.queued", runId: queuedRun, seq: 1, at: new Date().toISOString() }],
    { takesInput: left.id },
  );
  queuing.catch(() => {});
  await untilOneWaitsOnLock("the run's insert to wait for the delete");
  await taker.query("DELETE FROM sessions WHERE id = $1", [sessionId]);
  await taker.query("COMMIT");

  await expect(queuing).rejects.toSatisfy((err) => isConflict(err, "session_gone"));
  expect((await watcher.query("SELECT count(*)::int AS n FROM runs WHERE session_id = $1", [sessionId])).rows).toEqual([
    { n: 0 },
  ]);
});

/**
 * Two writers closing the same tool call at once (a run's end and a late write of its own, or
 * two processes): under READ COMMITTED the second one's ledger update waits for the first's
 * lock on the call's row, and once that commits it finds the call finished. Its batch is
 * refused whole: the call keeps one result (law 4), where an unguarded update stored two.
 */
it("PostgreSQL: a tool result written while another result of the call commits is refused, and the call keeps one", async () => {
  const sessionId = "ses_tworesults";
  const runId = "run_tworesults";
  await seedSession(store, { id: sessionId });
  await store.runs.create(runRecord({ id: runId, sessionId }), [
    { type: "run.started", runId, seq: 1, at: new Date().toISOString() },
  ]);
  const call = { id: "call_tworesults", name: "shell", input: '{"command":"ls"}' };
  const stamped = (message: AgentMessage, seq: number) =>
    ({ ...message, sessionId, runId, seq, createdAt: new Date().toISOString() }) as StoredMessage;
  await store.commitRun(
    runId,
    [{ kind: "message", message: stamped({ id: "msg_tr_1", role: "assistant", content: "", toolCalls: [call] }, 1) }],
    [],
  );

  // The first result's commit in progress: its message stored and the call's row updated.
  await taker.query("BEGIN");
  await taker.query(
    `INSERT INTO messages (id, session_id, run_id, seq, role, content, tool_call_id, metadata, created_at)
     VALUES ('msg_tr_2', $1, $2, 2, 'tool', 'aborted', $3, '{}', $4)`,
    [sessionId, runId, call.id, new Date().toISOString()],
  );
  await taker.query(
    "UPDATE tool_calls SET state = 'finished', result_message_id = 'msg_tr_2' WHERE run_id = $1 AND id = $2",
    [runId, call.id],
  );
  const second = stamped(toolResultMessage({ id: "msg_tr_3", toolCallId: call.id, outcome: abortedOutcome() }), 3);
  const writing = store.commitRun(
    runId,
    [{ kind: "message", message: second }],
    [{ type: "message", message: second, runId, seq: 2, at: second.createdAt }],
  );
  writing.catch(() => {});
  await untilOneWaitsOnLock("the second result to wait for the first");
  await taker.query("COMMIT");

  await expect(writing).rejects.toSatisfy((err) => isConflict(err, "call_closed"));
  const results = await watcher.query("SELECT id FROM messages WHERE run_id = $1 AND role = 'tool'", [runId]);
  expect(results.rows).toEqual([{ id: "msg_tr_2" }]);
  expect((await watcher.query("SELECT count(*)::int AS n FROM run_events WHERE run_id = $1", [runId])).rows).toEqual([
    { n: 1 },
  ]);
});
