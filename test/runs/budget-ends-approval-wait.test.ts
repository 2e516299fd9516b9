/**
 * A run's wall-time budget (maxDurationMs) counts the time it waits for a person's approval,
 * and ends that wait when it runs out: the call is closed BUDGET_EXHAUSTED, the run ends
 * `budget_exhausted`, and a decision sent afterwards is refused (409) as for a finished run.
 * Before, nothing ended the wait: the run stayed `awaiting_approval` past its budget, a late
 * approval was taken (200, `approval.resolved` approve), and then the approved call was not
 * executed (BUDGET_EXHAUSTED).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

it("a wall-time budget spent while a run waits for approval ends the wait; a later decision is refused", async () => {
  const { sessionId, runId } = await runAwaitingApproval(server, { run: { maxDurationMs: 1000 } });
  server.upstream.enqueue({ text: "never asked" });

  // Nobody answers: the budget, not the approval timeout (15 minutes), ends the wait.
  const run = await finishedRun(server, runId);
  expect(run).toMatchObject({ stopReason: "budget_exhausted", error: null, stats: { toolCalls: 0 } });
  expect((await server.request("GET", `/runs/${runId}/approvals`)).body.items).toEqual([]);

  const late = await server.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } });
  expect(late.status).toBe(409);
  expect(late.body.error.code).toBe("RUN_FINISHED");

  expect(toolResultCodes(await validHistory(server, sessionId))).toEqual(["BUDGET_EXHAUSTED"]);
  expect(existsSync(join(server.dir, "workspaces", sessionId, "a.txt"))).toBe(false);
  const events = await (await openSse(`${server.url}/runs/${runId}/events`)).ended;
  const types = events.map((e) => e.event);
  expect(types).not.toContain("approval.resolved");
  expect(types).not.toContain("tool.started");
  expect(types.slice(types.indexOf("approval.requested"))).toEqual(["approval.requested", "message", "run.finished"]);
}, 30_000);
