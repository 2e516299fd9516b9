/**
 * Steered input that a restart (ON_RESTART=resume) gave back to its run, whose request is gone:
 * the resumed run then ends without taking it (cancelled while it waits for its approval).
 * README: "When the run ends before it, `input` starts a new run instead"; input a run ended
 * without is queued as a new run. The run's end here queues it (over SQLite nothing else would
 * until the next restart): the steer's 202 named a run that never took it, and it must run.
 */
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
let upstream: FakeUpstream | undefined;
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close().catch(() => {});
  await upstream?.close();
  upstream = undefined;
});

it("input steered before a restart, left by its resumed run when that run is cancelled, becomes a run of its own", async () => {
  // Both servers' model: the first does not close it as it stops.
  upstream = await startFakeUpstream();
  const first = await startTestServer({ upstream });
  servers.push(first);
  const { sessionId, runId } = await runAwaitingApproval(first);
  const steering = first.request("POST", `/sessions/${sessionId}/runs`, {
    body: { input: "also this", ifBusy: "steer" },
  });
  await until(
    () => first.ctx.store.inputs.pending(runId),
    (p) => p.length === 1,
    "the steered input to be stored",
  );
  // A redeploy: the run is left for the restart, its input with it.
  await first.close({ keepDir: true, resume: true });
  servers.splice(servers.indexOf(first), 1);
  const answer = await steering;
  expect(answer.status).toBe(202);

  const second = await startTestServer({ dir: first.dir, upstream });
  servers.push(second);
  upstream.fallback = () => ({ text: "done" });
  await until(
    async () => (await second.request("GET", `/runs/${runId}`)).body.status,
    (s) => s === "awaiting_approval",
    "the resumed run to await its approval again",
  );
  expect((await second.request("DELETE", `/runs/${runId}`)).status).toBe(202);
  expect((await finishedRun(second, runId)).stopReason).toBe("aborted");

  // The input the run never took is a run of its own, which runs.
  const made = await until(
    async () =>
      ((await second.request("GET", `/sessions/${sessionId}/runs`)).body.items as { id: string; input: string }[]).find(
        (r) => r.input === "also this",
      ),
    (r) => r !== undefined,
    "a run made of the left input",
  ).catch(() => undefined);
  expect({ made: made !== undefined, left: (await second.ctx.store.inputs.orphaned()).map((i) => i.content) }).toEqual({
    made: true,
    left: [],
  });
  if (made) expect((await finishedRun(second, made.id)).stopReason).toBe("complete");
}, 40_000);
