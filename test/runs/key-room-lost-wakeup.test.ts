/**
 * A queued run whose start is refused for its key's MAX_RUNS_PER_KEY waits for "the next run
 * that ends" (QueuedStarts.runEnded). The refusal used to be noted only when the store's answer
 * arrived: a run of the key that ended while that answer was on its way found nothing noted, and
 * the queued run waited for a run end that might never come, on an idle session of a key with
 * room (SQLite: no reaper pass). Now a refusal after which a run ended starts the queues at once.
 */
import { afterEach, expect, it } from "vitest";
import { isConflict } from "../../src/store/errors.js";
import { gate } from "../fakes/gate.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY = "review-busy-key-room-0123456789";
const auth = { authorization: `Bearer ${KEY}` };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close().catch(() => {});
  server = undefined;
});

it("a queued run refused for its key's limit starts once the key's run ends, also when that run ends while the refusal is on its way", async () => {
  const upstream: FakeUpstream = await startFakeUpstream();
  upstream.fallback = () => ({ text: "ok" });
  const holdSteer = gate();
  let holdingSteer = true;
  const refusalHeld = gate();
  let refusals = 0;
  let refusalArrived = false;
  server = await startTestServer({
    upstream,
    env: { AGENT_API_KEYS: KEY, MAX_RUNS_PER_KEY: "1", MAX_CONCURRENT_RUNS: "8" },
    wrapStore: (store) =>
      aroundStore(
        aroundStore(store, "inputs", (name, _args, call) => {
          if (name !== "pendingStatus") return call();
          return (async () => {
            const status = await call();
            if (status === "finished" && holdingSteer) await holdSteer.wait;
            return status;
          })();
        }),
        "runs",
        (name, _args, call) => {
          if (name !== "startQueued") return call();
          return (call() as Promise<unknown>).catch(async (err) => {
            // The store's refusal (the key at its limit) arrives late: after the key's run ended.
            if (isConflict(err, "owner_runs") && refusals++ === 0) {
              await refusalHeld.wait;
              refusalArrived = true;
            }
            throw err;
          });
        },
      ),
  });
  const s = server;
  const post = (path: string, body: unknown) => s.request("POST", path, { body, headers: auth });
  const runOf = async (id: string) => (await s.request("GET", `/runs/${id}`, { headers: auth })).body;
  const [g1, g2] = [gate(), gate()];
  upstream.enqueue({ text: "one", gate: g1.wait }, { text: "other session", gate: g2.wait });
  const sessionS = (await post("/sessions", {})).body;
  const sessionB = (await post("/sessions", {})).body;
  const r1 = (await post(`/sessions/${sessionS.id}/runs`, { input: "first" })).body;
  await until(
    () => upstream.requests.length,
    (n) => n === 1,
    "R1's model request",
  );
  const steer = post(`/sessions/${sessionS.id}/runs`, { input: "steered", ifBusy: "steer" });
  await until(
    () => s.ctx.store.inputs.pending(r1.id),
    (p) => p.length === 1,
    "the steered input stored",
  );
  g1.open();
  await until(
    async () => (await runOf(r1.id)).status,
    (st) => st === "finished",
    "R1 to finish",
  );
  await until(
    () => s.ctx.manager.liveCount,
    (n) => n === 0,
    "R1's slot given back",
  );
  // The key's one run, in another session.
  const r2 = await post(`/sessions/${sessionB.id}/runs`, { input: "busy elsewhere" });
  expect(r2.status).toBe(201);
  holdingSteer = false;
  holdSteer.open();
  const answer = await steer;
  expect({ status: answer.status, runStatus: answer.body.status }).toEqual({ status: 201, runStatus: "queued" });
  // The start the steer asked for was refused by the store (R2 runs); its answer is on its way.
  await until(
    () => refusals,
    (n) => n === 1,
    "the queued start refused for the key",
  );
  // R2 ends meanwhile (its run end is handled here, slot and all).
  g2.open();
  await until(
    async () => (await runOf(r2.body.id)).status,
    (st) => st === "finished",
    "R2 to finish",
  );
  // R2 is no longer executed here (removed from the registry; its end handled in the same chain).
  await until(
    () => s.ctx.manager.executes(r2.body.id),
    (v) => !v,
    "R2 to leave the registry",
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  refusalHeld.open();
  await until(
    () => refusalArrived,
    (v) => v,
    "the refusal delivered",
  );
  // The session is idle and the key has no run: the queued run must start and run.
  const steered = await until(
    () => runOf(answer.body.id),
    (run) => run.status === "finished",
    "the queued steered run to run (it stays queued)",
  ).catch(async (err) => {
    const now = await runOf(answer.body.id);
    throw new Error(
      `${(err as Error).message}: status ${now.status}, activeRunId ${(await s.request("GET", `/sessions/${sessionS.id}`, { headers: auth })).body.activeRunId}`,
    );
  });
  expect({ stopReason: steered.stopReason, input: steered.input }).toEqual({
    stopReason: "complete",
    input: "steered",
  });
});
