/**
 * README: "Budgets ... count the whole run: a run resumed after a restart keeps counting its ...
 * wall time (the time it executed, waits for approval included)", and that wall time is
 * `stats.durationMs`. A run waiting for approval when the server shuts down (ON_RESTART=resume)
 * must not lose the wait it already did: its duration never goes backwards.
 */
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
let upstream: FakeUpstream | undefined;
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close().catch(() => {});
  await upstream?.close();
  upstream = undefined;
});

it("a run's durationMs keeps the approval wait it did before a graceful restart (ON_RESTART=resume)", async () => {
  upstream = await startFakeUpstream();
  const first = await startTestServer({ upstream });
  const { runId } = await runAwaitingApproval(first);
  // Let the wait grow to 3 s as the run's own view counts it (the stored duration is as of the
  // approval request, about 0.1 s).
  const before = await until(
    async () => (await first.request("GET", `/runs/${runId}`)).body,
    (run) => run.stats.durationMs >= 3000,
    "the approval wait to reach 3 s",
  );
  expect(before.status).toBe("awaiting_approval");
  await first.close({ keepDir: true, resume: true });

  const second = await startTestServer({ upstream, dir: first.dir });
  servers.push(second);
  const resumed = (await second.request("GET", `/runs/${runId}`)).body;
  expect(resumed.status).toBe("awaiting_approval");
  // The wait before the restart is part of the run's wall time.
  expect(resumed.stats.durationMs).toBeGreaterThanOrEqual(before.stats.durationMs);

  upstream.enqueue({ text: "done" });
  await second.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } });
  const ended = await finishedRun(second, runId);
  expect(ended.stats.durationMs).toBeGreaterThanOrEqual(before.stats.durationMs);
});

it("a run's durationMs keeps the time of a model request a graceful restart (ON_RESTART=resume) cuts", async () => {
  upstream = await startFakeUpstream();
  const first = await startTestServer({ upstream });
  // A reply that never comes: the request is in flight when the server shuts down.
  upstream.enqueue({ text: "never finished", gate: new Promise(() => {}) });
  const sessionId = (await first.request("POST", "/sessions", { body: {} })).body.id;
  const runId = (await first.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "go" } })).body.id;
  const before = await until(
    async () => (await first.request("GET", `/runs/${runId}`)).body,
    (run) => run.stats.durationMs >= 1500,
    "the model request to take 1.5 s",
  );
  upstream.enqueue({ text: "done" });
  await first.close({ keepDir: true, resume: true });

  const second = await startTestServer({ upstream, dir: first.dir });
  servers.push(second);
  const ended = await finishedRun(second, runId);
  expect(ended.stopReason).toBe("complete");
  expect(ended.stats.durationMs).toBeGreaterThanOrEqual(before.stats.durationMs);
});
