/**
 * Two instances over one PostgreSQL database. A client watches a run's events on instance B
 * (`GET /runs/{id}/events`; a load balancer sent it there) while the run executes on instance A,
 * and the client (or an operator) deletes the session on A: `DELETE /sessions/{id}` aborts the
 * run, which ends with `run.finished` (aborted), then deletes the session's rows at once.
 *
 * B learns of A's events through its relay: a notification, then a read of the events after the
 * last one it relayed. When that read comes after A's delete has removed the run's events (A's
 * delete follows the run's end by a few milliseconds; B's read is one more round trip after the
 * notification), it finds nothing, and nothing else ever tells B's watcher the run is over: the
 * relay publishes nothing more for a run that is gone, the safety poll reads nothing either, and
 * the follower, live, only waits for the hub. The SSE stream stays open for ever, heartbeats and
 * all; a client waiting for `run.finished` (README: the stream "ends after `run.finished`"; the
 * console's watch "ends saying so" when "the run is gone: its session deleted") never gets it.
 *
 * Expected: B's stream ends (with `run.finished`, or at least closes) once the run is gone. The
 * hook only makes B's reads of the run slower than A's delete, to fix the interleaving (without
 * it, on this machine, B's watcher got the aborted tool result's `message` and then nothing, in
 * every try: the race is lost in practice, not only in theory).
 */
import { afterEach, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

it("a watcher on B of a run whose session A deletes sees its stream end", { timeout: 60_000 }, async () => {
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());
  const a = await startTestServer({ pgUrl: database.url });
  servers.push(a);

  // B: once armed, its reads of the run's events wait until the test opens `slowReads`.
  let slowRun: string | null = null;
  const slowReads = gate();
  let slowedReads = 0;
  const b = await startTestServer({
    pgUrl: database.url,
    upstream: a.upstream,
    wrapStore: (store: Store) => {
      const lastSeq = store.events.lastSeq.bind(store.events);
      store.events.lastSeq = async (id) => {
        if (id === slowRun) {
          slowedReads++;
          await slowReads.wait;
        }
        return lastSeq(id);
      };
      const afterWithin = store.events.afterWithin.bind(store.events);
      store.events.afterWithin = async (id, seq, page) => {
        if (id === slowRun) {
          slowedReads++;
          await slowReads.wait;
        }
        return afterWithin(id, seq, page);
      };
      return store;
    },
  });
  servers.push(b);

  // A run on A waiting for approval of a shell command; watched on B, live.
  a.upstream.enqueue({ toolCalls: [{ id: "call_1", name: "shell", arguments: '{"command":"echo hi"}' }] });
  const session = (await a.request("POST", "/sessions", { body: {} })).body;
  const run = (await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  const watcher = await openSse(`${b.url}/runs/${run.id}/events`);
  await watcher.waitFor((e) => e.event === "approval.requested");

  // From now on B reads the run's events a little later than A deletes them.
  slowRun = run.id;
  expect((await a.request("DELETE", `/sessions/${session.id}`)).status).toBe(204);
  // B's relay was told of the run's end and is reading (slowly).
  await until(
    () => slowedReads,
    (n) => n > 0,
    "B's relay to read the run's new events",
  );
  slowReads.open();

  let ended = false;
  void watcher.ended.then(() => {
    ended = true;
  });
  try {
    await expect.poll(() => ended, { timeout: 20_000, interval: 100 }).toBe(true);
  } finally {
    watcher.close();
  }
});
