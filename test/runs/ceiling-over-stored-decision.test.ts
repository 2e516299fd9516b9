/**
 * An approval stored while no process executed its run (a decision posted to a peer after the
 * owner was lost, or written just before a restart) and a restart with a stricter operator
 * ceiling (APPROVAL_POLICY_MAX, or shell denied to several keys unsandboxed): the resumed run
 * reused the stored approval and ran the tool the ceiling now denies. The ceiling wins.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a stored approval of a tool the operator's ceiling now denies is not used after the restart", async () => {
  const first = await startTestServer();
  const { sessionId, runId } = await runAwaitingApproval(first);
  await first.close({ keepDir: true, resume: true });
  // Approved while nobody executes the run: the decision is in the ledger only.
  const store = openSqliteStore({ path: join(first.dir, "agent.db") });
  await store.commitRequest(runId, [
    { kind: "toolCall.decided", toolCallId: "call_w", decision: "approve", reason: null, at: new Date().toISOString() },
  ]);
  await store.close();
  server = await startTestServer({ dir: first.dir, env: { APPROVAL_POLICY_MAX: "write_file=deny" } });
  server.upstream.fallback = () => ({ text: "done" });
  const run = await finishedRun(server, runId);
  expect(run.stopReason).toBe("complete");
  expect(toolResultCodes(await validHistory(server, sessionId))).toEqual(["DENIED"]);
  const workspace = (await server.request("GET", `/sessions/${sessionId}`)).body.workspace as string;
  expect(existsSync(join(server.ctx.config.WORKSPACE_ROOT, workspace, "a.txt"))).toBe(false);
});
