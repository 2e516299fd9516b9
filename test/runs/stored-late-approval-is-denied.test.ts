/**
 * An approval the ledger holds from later than APPROVAL_TIMEOUT_MS after its request (written
 * by a version that did not refuse one, or under a longer timeout) is not used by the resumed
 * run: the call is the timeout's, denied (fail closed), and announced so.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

const TIMEOUT_MS = 60_000;
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a stored approval later than the call's approval timeout is the timeout's denial after a restart", async () => {
  const first = await startTestServer();
  const { sessionId, runId } = await runAwaitingApproval(first);
  await first.close({ keepDir: true, resume: true });
  // Approved while nobody executes the run, past the request's deadline, with no deadline given.
  const store = openSqliteStore({ path: join(first.dir, "agent.db") });
  const requestedAt = (await store.toolCalls.status(runId, "call_w"))?.approvalRequestedAt as string;
  const late = new Date(Date.parse(requestedAt) + TIMEOUT_MS + 1).toISOString();
  await store.commitRequest(runId, [
    { kind: "toolCall.decided", toolCallId: "call_w", decision: "approve", reason: null, at: late },
  ]);
  await store.close();
  server = await startTestServer({ dir: first.dir, env: { APPROVAL_TIMEOUT_MS: String(TIMEOUT_MS) } });
  server.upstream.fallback = () => ({ text: "done" });
  expect((await finishedRun(server, runId)).stopReason).toBe("complete");
  expect(toolResultCodes(await validHistory(server, sessionId))).toEqual(["DENIED"]);
  const workspace = (await server.request("GET", `/sessions/${sessionId}`)).body.workspace as string;
  expect(existsSync(join(server.ctx.config.WORKSPACE_ROOT, workspace, "a.txt"))).toBe(false);
  const events = await (await openSse(`${server.url}/runs/${runId}/events`)).ended;
  const resolved = events.filter((e) => e.event === "approval.resolved").map((e) => e.json.decision);
  expect(resolved).toEqual(["deny"]);
});
