/**
 * A run's `stats.durationMs` is its wall time, waits for approval included (README; its
 * `maxDurationMs` is measured on it). Stats are stored only with the run's writes, so while a
 * run waits (for an approval, a long tool) the stored duration stays as the wait began: the
 * view of a run executing on the instance that answers counts it up to now.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  server.upstream.fallback = () => ({ text: "done" });
});
afterAll(async () => {
  await server?.close();
});

it("a run waiting for approval shows a duration that includes the wait so far", async () => {
  const { runId } = await runAwaitingApproval(server);
  // The run started before this moment: its duration is at least the time since.
  const waitingSince = Date.now();
  const WAITED_MS = 1500;
  await until(
    () => Date.now() - waitingSince,
    (waited) => waited >= WAITED_MS,
    "the wait to last",
  );
  const run = (await server.request("GET", `/runs/${runId}`)).body;
  expect(run.status).toBe("awaiting_approval");
  expect(run.stats.durationMs).toBeGreaterThanOrEqual(WAITED_MS);

  // The duration shown so far is never more than the run's end stores.
  await server.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } });
  const ended = await finishedRun(server, runId);
  expect(ended.stats.durationMs).toBeGreaterThanOrEqual(run.stats.durationMs);
});
