/**
 * A queued run of a key at its MAX_RUNS_PER_KEY waits for the key's room. Here (limit 1) a
 * steer's run R1 ends without taking its input, and before the steer's own start is admitted
 * the key starts R2 in another session (the store wrapper holds the steer's read of its run's
 * end to fix that interleaving). The steer's start is refused for the key's limit and its input
 * is queued (201 `queued`). Before, that queued run then started at once beside R2 (a queued
 * run was started without regard to its key's limit: the key had two live runs, and repeated,
 * could fill MAX_CONCURRENT_RUNS); now it stays `queued` while R2 runs, and starts once R2 ends.
 */
import { afterEach, expect, it } from "vitest";
import { steerLeftAtLimit } from "../helpers/steer-left-at-limit.js";
import type { TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY = "queued-key-room-key-0123456789";
const auth = { authorization: `Bearer ${KEY}` };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close().catch(() => {});
  server = undefined;
});

it("a steer refused for MAX_RUNS_PER_KEY is queued, and its run waits for the key's room, then runs", async () => {
  /** Settled starts of queued runs, per session. */
  const settledStarts = new Map<string, number>();
  const setup = await steerLeftAtLimit({
    env: { AGENT_API_KEYS: KEY, MAX_RUNS_PER_KEY: "1", MAX_CONCURRENT_RUNS: "8" },
    auth,
    more: [{ text: "steered" }],
    wrapRuns: (name, args, call) => {
      if (name !== "startQueued") return call();
      const sessionId = String(args[0]);
      const count = () => settledStarts.set(sessionId, (settledStarts.get(sessionId) ?? 0) + 1);
      const started = call() as Promise<unknown>;
      started.then(count, count);
      return started;
    },
  });
  server = setup.server;
  const { upstream, runOf, sessionS, r2, steer, gates } = setup;
  const startsBefore = settledStarts.get(sessionS.id) ?? 0;
  setup.releaseSteer();
  const answer = await steer;
  expect({ status: answer.status, runStatus: answer.body.status }).toEqual({ status: 201, runStatus: "queued" });
  // The start of session S's queue that the steer asked for has been tried.
  await until(
    () => settledStarts.get(sessionS.id) ?? 0,
    (n) => n > startsBefore,
    "the queue of session S to be tried",
  );
  const statuses = { r2: (await runOf(r2.id)).status, steered: (await runOf(answer.body.id)).status };
  // The key's live runs: R2 alone; the steered run waits (and asked the model nothing).
  expect({ statuses, modelRequests: upstream.requests.length }).toEqual({
    statuses: { r2: "running", steered: "queued" },
    modelRequests: 2,
  });
  // Once R2 ends the key has room again: the steered run starts and runs.
  gates.more[0]?.();
  gates.r2();
  await until(
    async () => (await runOf(r2.id)).status,
    (st) => st === "finished",
    "R2 to finish",
  );
  const steered = await until(
    () => runOf(answer.body.id),
    (run) => run.status === "finished",
    "the steered run to finish",
  );
  expect({ stopReason: steered.stopReason, input: steered.input }).toEqual({
    stopReason: "complete",
    input: "steered",
  });
});
