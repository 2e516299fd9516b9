/**
 * Two instances over one PostgreSQL database. A client's DELETE /sessions/{id} reaches
 * instance B (a retry behind a load balancer, a second operator tool, a double click) while
 * another DELETE of the same session reaches instance A, which executes the session's run.
 *
 * B's delete cancels the run and waits for its end "wherever it executes, through the same
 * relay" (README, Running several instances). When A's own delete removes the run's rows right
 * after the run ended and before B's relay has read the run's `run.finished` (B's reads only a
 * little slower than A's delete: a loaded host, a slower connection), B never learns the run
 * ended: `waitForRelayedEnd` asks `runs.access`, which finds no run (null, not "finished"), and
 * then waits for a `run.finished` event that was deleted with the session. B's DELETE never
 * answers (the request hangs until the client gives up; the relay's safety poll reads nothing
 * either).
 *
 * Expected: B's DELETE answers (204: the session is gone; a 404 would do as well) once A's
 * delete has removed the session: a run found gone is over, not waited for for ever. The
 * hooks only slow B's reads of the run and hold A's end commit until B is waiting, to make the
 * interleaving deterministic; nothing is faked.
 */
import { afterEach, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { door, gate } from "../fakes/gate.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

it("a DELETE on B of a session A deletes at the same time answers once the session is gone", {
  timeout: 60_000,
}, async () => {
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());

  // A: holds the commit of the watched run's end (run.finished) until the test releases it.
  let holdEndOf: string | null = null;
  const endHeld = door();
  const a = await startTestServer({
    pgUrl: database.url,
    wrapStore: (store: Store) => {
      const commitRun = store.commitRun.bind(store);
      store.commitRun = async (runId, changes, events, fence) => {
        if (runId === holdEndOf && events.some((e) => e.type === "run.finished")) await endHeld.pass();
        return commitRun(runId, changes, events, fence);
      };
      return store;
    },
  });
  servers.push(a);

  // B: its reads of the watched run (whether it has finished, its events) are slow: they
  // wait until the test opens `slowReads`.
  let slowRun: string | null = null;
  const slowReads = gate();
  const bAsked = door();
  const b = await startTestServer({
    pgUrl: database.url,
    upstream: a.upstream,
    wrapStore: (store: Store) => {
      const access = store.runs.access.bind(store.runs);
      store.runs.access = async (id) => {
        if (id === slowRun) {
          void bAsked.pass();
          await slowReads.wait;
        }
        return access(id);
      };
      const lastSeq = store.events.lastSeq.bind(store.events);
      store.events.lastSeq = async (id) => {
        if (id === slowRun) await slowReads.wait;
        return lastSeq(id);
      };
      const afterWithin = store.events.afterWithin.bind(store.events);
      store.events.afterWithin = async (id, seq, page) => {
        if (id === slowRun) await slowReads.wait;
        return afterWithin(id, seq, page);
      };
      return store;
    },
  });
  servers.push(b);

  // A run on A waiting for approval of a shell command.
  a.upstream.enqueue({ toolCalls: [{ id: "call_1", name: "shell", arguments: '{"command":"echo hi"}' }] });
  const session = (await a.request("POST", "/sessions", { body: {} })).body;
  const run = (await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await until(
    async () => (await a.request("GET", `/runs/${run.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the run to wait for approval",
  );

  holdEndOf = run.id;
  slowRun = run.id;
  // B's DELETE: cancels the run (A aborts it; its end's commit is held) and waits for its end.
  let bAnswer: { status: number } | null = null;
  const bDeleting = b
    .request("DELETE", `/sessions/${session.id}`)
    .then((res) => {
      bAnswer = res;
    })
    // A request still hanging when the server closes at the test's end.
    .catch(() => {});
  await endHeld.arrived;
  await bAsked.arrived;

  // A's end is committed, and A's own DELETE (of the run now finished) removes the session.
  endHeld.release();
  const aDelete = await a.request("DELETE", `/sessions/${session.id}`);
  expect(aDelete.status).toBe(204);
  expect(await a.ctx.store.sessions.access(session.id)).toBeNull();

  // B's reads now go on: they find the run gone.
  slowReads.open();
  await expect
    .poll(() => bAnswer?.status ?? "no answer from B yet", { timeout: 20_000, interval: 100 })
    .toBeOneOf([204, 404]);
  await bDeleting;
});
