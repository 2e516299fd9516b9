/**
 * openapi.yaml (RunStats.durationMs) and README: "A view of a run executing on the instance that
 * answers counts it up to now". 04c7044/d5111e4 made GET /runs/{id} and a repeated start count it;
 * the session's run list (GET /sessions/{id}/runs) still shows the duration as of the run's last
 * write: a client reading both sees the same run's wall time go backwards.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

it("the session's run list shows a run executing here with its duration up to now, as GET /runs/{id} does", async () => {
  const { sessionId, runId } = await runAwaitingApproval(server);
  const first = (await server.request("GET", `/runs/${runId}`)).body.stats.durationMs as number;
  // The run waits for its approval: nothing is written, and its wall time counts on.
  const later = await until(
    async () => (await server.request("GET", `/runs/${runId}`)).body.stats.durationMs as number,
    (ms) => ms >= first + 300,
    "the run's duration to count on",
  );
  const list = await server.request("GET", `/sessions/${sessionId}/runs`);
  expect(list.status).toBe(200);
  const listed = list.body.items.find((r: { id: string }) => r.id === runId);
  expect(listed.status).toBe("awaiting_approval");
  expect(listed.stats.durationMs).toBeGreaterThanOrEqual(later);
});
