/**
 * A call asked before a restart (approval.requested stored, undecided) that the restarted
 * server's ceiling now denies: the resumed run closes it DENIED by policy. No `approval.resolved`
 * used to follow its `approval.requested`, so clients (the CLI, a chat UI) that withdraw a
 * question on `approval.resolved` kept asking about a closed call; now the policy's decision is
 * recorded and announced as a person's would be.
 */
import { afterEach, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a requested approval closed by a stricter ceiling after a restart is announced resolved", async () => {
  const first = await startTestServer();
  const { sessionId, runId } = await runAwaitingApproval(first);
  await first.close({ keepDir: true, resume: true });
  server = await startTestServer({ dir: first.dir, env: { APPROVAL_POLICY_MAX: "write_file=deny" } });
  server.upstream.fallback = () => ({ text: "done" });
  const run = await finishedRun(server, runId);
  expect(run.stopReason).toBe("complete");
  expect(toolResultCodes(await validHistory(server, sessionId))).toEqual(["DENIED"]);
  const stream = await openSse(`${server.url}/runs/${runId}/events`);
  const events = await stream.ended;
  const requested = events.filter((e) => e.event === "approval.requested").map((e) => e.json.toolCallId);
  const resolved = events.filter((e) => e.event === "approval.resolved").map((e) => e.json.toolCallId);
  expect(requested).toEqual(["call_w"]);
  expect(resolved).toEqual(["call_w"]);
});
