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
import { steerLeftAtLimit } from "../helpers/steer-left-at-limit.js";
import type { TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY = "review-busy-key-room-0123456789";
const auth = { authorization: `Bearer ${KEY}` };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close().catch(() => {});
  server = undefined;
});

it("a queued run refused for its key's limit starts once the key's run ends, also when that run ends while the refusal is on its way", async () => {
  const refusalHeld = gate();
  let refusals = 0;
  let refusalArrived = false;
  const setup = await steerLeftAtLimit({
    env: { AGENT_API_KEYS: KEY, MAX_RUNS_PER_KEY: "1", MAX_CONCURRENT_RUNS: "8" },
    auth,
    wrapRuns: (name, _args, call) => {
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
  });
  server = setup.server;
  const s = setup.server;
  const { runOf, sessionS, r2, steer, gates } = setup;
  setup.releaseSteer();
  const answer = await steer;
  expect({ status: answer.status, runStatus: answer.body.status }).toEqual({ status: 201, runStatus: "queued" });
  // The start the steer asked for was refused by the store (R2 runs); its answer is on its way.
  await until(
    () => refusals,
    (n) => n === 1,
    "the queued start refused for the key",
  );
  // R2 ends meanwhile (its run end is handled here, slot and all).
  gates.r2();
  await until(
    async () => (await runOf(r2.id)).status,
    (st) => st === "finished",
    "R2 to finish",
  );
  // R2 is no longer executed here (removed from the registry; its end handled in the same chain).
  await until(
    () => s.ctx.manager.executes(r2.id),
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
