/**
 * A write whose COMMIT is answered later than DATABASE_QUERY_TIMEOUT_MS (a stalled fsync, a
 * synchronous standby catching up) but commits: the recorder was told it failed, kept its
 * events and wrote them again with the same seqs, and every later write of the run failed on
 * the duplicate key: the run could write nothing more. Such a write's outcome is unknown: the
 * recorder now leaves the run (sealed, its LiveRun told), for recovery from what is stored.
 */
import pg from "pg";
import { afterEach, beforeEach, expect, it } from "vitest";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { RunSuspendedError } from "../../src/runs/run-write.js";
import { StorageError } from "../../src/store/errors.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { until } from "../helpers/until.js";

let database: TestPgDatabase;
let store: Store;
let admin: pg.Client;
beforeEach(async () => {
  database = await createTestPgDatabase();
  store = await openPgStore({ url: database.url, maxConnections: 4, queryTimeoutMs: 1000 });
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  // While slow_commit.on_ is true, a COMMIT that stored run events takes 1.5 s, and commits.
  await admin.query(`CREATE TABLE slow_commit (on_ boolean); INSERT INTO slow_commit VALUES (false);
    CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF (SELECT on_ FROM slow_commit) THEN PERFORM pg_sleep(1.5); END IF; RETURN NULL; END $$;
    CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON run_events DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION slow_commit();`);
});
afterEach(async () => {
  await admin?.end();
  await store?.close();
  await database?.drop();
});

it("a write answered after the query timeout leaves the run to recovery instead of writing its events again", async () => {
  const sessionId = "ses_slowcommit";
  const runId = "run_slowcommit";
  await seedSession(store, { id: sessionId });
  await store.runs.create(runRecord({ id: runId, sessionId }), [
    { type: "run.started", runId, seq: 1, at: new Date().toISOString() },
  ]);
  const recorder = await RunRecorder.open({ store, hub: new EventHub(), runId, sessionId });
  const left: string[] = [];
  recorder.onLeft((why) => left.push(why));
  await admin.query("UPDATE slow_commit SET on_ = true");
  recorder.buffer({ type: "text.delta", text: "hello" });
  const first = await recorder.write(() => ({ changes: [], events: [] })).catch((err: unknown) => err);
  expect(first).toBeInstanceOf(StorageError);
  expect((first as StorageError).outcomeUnknown).toBe(true);
  expect(left).toEqual(["outcome_unknown"]);
  await admin.query("UPDATE slow_commit SET on_ = false");
  // The COMMIT went through after all (1.5 s after it was sent): waited for until it has, rather
  // than for a fixed 1 s past the timeout, which a loaded database could take longer than.
  await until(
    async () => (await admin.query("SELECT 1 FROM run_events WHERE run_id = $1 AND seq = 2", [runId])).rowCount,
    (found) => found === 1,
    "the slow COMMIT to go through",
  );
  recorder.buffer({ type: "text.delta", text: " more" });
  const later = await recorder.write(() => ({ changes: [], events: [] })).catch((err: unknown) => err);
  expect(later).toBeInstanceOf(RunSuspendedError);
  const rows = (await admin.query("SELECT seq, type FROM run_events WHERE run_id = $1 ORDER BY seq", [runId])).rows;
  expect(rows).toEqual([
    { seq: 1, type: "run.started" },
    { seq: 2, type: "text.delta" },
  ]);
}, 30_000);
