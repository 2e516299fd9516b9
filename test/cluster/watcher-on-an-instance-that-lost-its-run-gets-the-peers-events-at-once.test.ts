import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * README ("Running several instances", "Live events everywhere"): every commit of a run's events
 * sends a notification, and a watcher on an instance that does not execute the run "gets every
 * event live, in order, once". An instance paused past its lease (SIGSTOP, a VM pause, an event
 * loop blocked) is told, while it is paused, of every event the peer that took its run over
 * commits; it handles those notifications when it wakes, before it notices (at its next
 * renewal, or its self-expiry timer) that the run is no longer its own, so its relay leaves them
 * to the run's recorder. The peer may have finished the run by then: no notification follows,
 * and what it committed must be read when the run stops being executed here, not at the relay's
 * 10 s safety poll (which is what the watchers on the woken instance, and a
 * `DELETE /sessions/{id}` or `?wait=true` waiting there, would otherwise wait for).
 *
 * Here the same order is made deterministic in process: A executes the run (a watcher on A
 * streams it), B claims it after its lease "expired" and finishes it, A has been notified of all
 * of B's events, then A's renewal finds the lease lost and A gives the run up. Expected: A's
 * watcher gets B's events and `run.finished` at once.
 */
it("a watcher on an instance that lost its run gets the events the peer committed meanwhile as soon as it gives the run up (postgres)", async () => {
  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const database = await createTestPgDatabase();
  cleanups.push(() => database.drop());
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  cleanups.push(() => client.end());
  // A long lease: no timer renews (nor self-expires) A's lease during the test; the test renews by hand.
  const env = { RUN_LEASE_MS: "600000" };
  const a = await startTestServer({ upstream, pgUrl: database.url, env: { ...env, INSTANCE_ID: "inst-a" } });
  cleanups.push(() => a.close());
  const b = await startTestServer({ upstream, pgUrl: database.url, env: { ...env, INSTANCE_ID: "inst-b" } });
  cleanups.push(() => b.close());

  const onA = gate();
  upstream.enqueue({ text: ["on a "], gate: onA.wait }, { text: ["the answer from b"] });
  const session = (await a.request("POST", "/sessions", { body: {} })).body.id as string;
  const started = await a.request("POST", `/sessions/${session}/runs`, { body: { input: "go" } });
  expect(started.status).toBe(201);
  const runId = started.body.id as string;
  const watcher = await openSse(`${a.url}/runs/${runId}/events`);
  cleanups.push(() => watcher.close());
  await watcher.waitFor((e) => e.event === "text.delta");

  // What A's listening connection has been told of the run's events.
  let notifiedUpTo = 0;
  const notifications = a.ctx.store.notifications;
  if (!notifications) throw new Error("expected a shared store");
  cleanups.push(
    notifications.subscribe({
      events: (id, seq) => {
        if (id === runId) notifiedUpTo = Math.max(notifiedUpTo, seq);
      },
    }),
  );

  // A stalls past its lease: B's reaper takes the run over and finishes it.
  await client.query("UPDATE runs SET lease_expires_at = 0 WHERE id = $1", [runId]);
  const reaped = await b.ctx.manager.ownership.reap();
  expect(reaped.resumed).toEqual([runId]);
  const ended = await until(
    async () => (await b.request("GET", `/runs/${runId}`)).body,
    (run) => run.status === "finished",
    "the run to finish on B",
  );
  expect(ended.stopReason).toBe("complete");
  const lastSeq = Number(
    (await client.query<{ seq: number }>("SELECT max(seq) AS seq FROM run_events WHERE run_id = $1", [runId])).rows[0]
      ?.seq,
  );
  // A has been told of every event B committed (while it still executed the run itself).
  await until(
    () => notifiedUpTo,
    (seq) => seq >= lastSeq,
    "A to be notified of B's events",
  );

  // A wakes up to its lease being lost and gives the run up.
  await a.ctx.manager.ownership.renew();
  await until(
    () => a.ctx.manager.executes(runId),
    (executes) => !executes,
    "A to give the run up",
  );
  onA.open();

  // What B committed is in the database: A's watcher gets it, through to run.finished, at once
  // (well within A's relay's 10 s safety poll, which is what delivers it now).
  await expect.poll(() => watcher.events.at(-1)?.event, { timeout: 3_000, interval: 25 }).toBe("run.finished");
  const events = await watcher.ended;
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
});
