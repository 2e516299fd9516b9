/**
 * startQueues (src/runs/recovery.ts) stops its pass over the queues as soon as a session's start
 * comes back null and the server has no room at that moment. It used to stop without noting that
 * queues still waited for room, so the sessions after it in the pass were never tried again when
 * slots came back. Here a queued run of session A is cancelled while the pass reads A's queue,
 * and a plain start in another session takes the slot meanwhile: session B's queued run, which
 * waited for room, stayed `queued` on an idle session of an idle server. Now a start that comes
 * back empty while this process is full notes that queues wait for room.
 */
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close().catch(() => {});
  server = undefined;
});

it("a queued run that waited for a slot starts once slots are free, whatever the pass met in the sessions before it", async () => {
  let armedFor: string | null = null;
  /** Reads of each session's queue (a start of that queue begins with one). */
  const reads = new Map<string, number>();
  const reached = gate();
  const release = gate();
  server = await startTestServer({
    env: { MAX_CONCURRENT_RUNS: "2" },
    wrapStore: (store) =>
      aroundStore(store, "runs", (name, args, call) => {
        if (name === "anyQueued") reads.set(String(args[0]), (reads.get(String(args[0])) ?? 0) + 1);
        if (name === "anyQueued" && armedFor !== null && args[0] === armedFor) {
          armedFor = null;
          reached.open();
          return release.wait.then(call);
        }
        return call();
      }),
  });
  const s = server;
  s.upstream.fallback = () => ({ text: "ok" });
  const [gx, gy, gd] = [gate(), gate(), gate()];
  s.upstream.enqueue({ text: "x", gate: gx.wait }, { text: "y", gate: gy.wait }, { text: "d", gate: gd.wait });
  const newSession = async () => (await s.request("POST", "/sessions", { body: {} })).body.id as string;
  const post = (id: string, body: unknown) => s.request("POST", `/sessions/${id}/runs`, { body });
  const runOf = async (id: string) => (await s.request("GET", `/runs/${id}`)).body;
  const [a, b, x, y, d] = [
    await newSession(),
    await newSession(),
    await newSession(),
    await newSession(),
    await newSession(),
  ];
  const rx = (await post(x, { input: "x" })).body;
  await until(
    () => s.upstream.requests.length,
    (n) => n === 1,
    "RX's model request",
  );
  const ry = (await post(y, { input: "y" })).body;
  await until(
    () => s.upstream.requests.length,
    (n) => n === 2,
    "RY's model request",
  );
  // The server is full: both enqueues on idle sessions are queued, waiting for room.
  const qa = await post(a, { input: "qa", ifBusy: "enqueue" });
  const qb = await post(b, { input: "qb", ifBusy: "enqueue" });
  expect([qa.status, qa.body.status, qb.status, qb.body.status]).toEqual([201, "queued", 201, "queued"]);
  // RX ends: the slot it gives back starts a pass over the queues (A first, then B).
  armedFor = a;
  gx.open();
  await reached.wait;
  // While the pass reads A's queue: A's queued run is cancelled, and D takes the free slot.
  expect((await s.request("DELETE", `/runs/${qa.body.id}`)).status).toBe(202);
  const rd = await post(d, { input: "d" });
  expect(rd.status).toBe(201);
  const readsOfB = reads.get(b) ?? 0;
  release.open();
  await until(
    async () => (await runOf(rx.id)).status,
    (st) => st === "finished",
    "RX to finish",
  );
  // Every other run ends: the server is empty, session B idle with its queued run.
  gd.open();
  gy.open();
  await until(
    async () => (await runOf(rd.body.id)).status,
    (st) => st === "finished",
    "RD to finish",
  );
  await until(
    async () => (await runOf(ry.id)).status,
    (st) => st === "finished",
    "RY to finish",
  );
  const run = await until(
    () => runOf(qb.body.id),
    (r) => r.status === "finished",
    "QB to run",
  ).catch(async (err) => {
    throw new Error(
      `${(err as Error).message}: QB is ${(await runOf(qb.body.id)).status}, live runs ${s.ctx.manager.liveCount}, reads of B's queue since the pass: ${(reads.get(b) ?? 0) - readsOfB}`,
    );
  });
  expect(run.stopReason).toBe("complete");
});
