/**
 * A chat request whose answered message carries both `approved: true` and `approved: false`
 * for the same tool call (a buggy or hostile page) contradicts itself: it is refused as a whole
 * (400 CONTRADICTORY_APPROVALS), deciding nothing. Applying its decisions one by one stored the
 * approval (the write_file call ran), then answered the denial 409 APPROVAL_CONFLICT: the
 * client was told its request conflicted, yet half of it took effect.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

it("a chat message approving and denying the same call is refused and decides nothing", async () => {
  const { sessionId, runId } = await runAwaitingApproval(server);
  // Whatever happens next, the run may end (the approved call runs, the model is asked again).
  server.upstream.fallback = () => ({ text: "done" });
  const part = (approved: boolean) => ({
    type: "dynamic-tool",
    toolName: "write_file",
    toolCallId: "call_w",
    state: "approval-responded",
    input: { path: "a.txt", content: "hi" },
    approval: { id: "call_w", approved },
  });
  const res = await server.request("POST", `/sessions/${sessionId}/chat`, {
    body: {
      messages: [
        { id: "u1", role: "user", parts: [{ type: "text", text: "write" }] },
        { id: runId, role: "assistant", parts: [part(true), part(false)] },
      ],
    },
  });
  const call = await server.ctx.store.toolCalls.status(runId, "call_w");
  // Refused (a client error), and the call still waits for a decision: nothing of the request applied.
  expect(
    { clientError: res.status >= 400 && res.status < 500, decision: call?.decision ?? null },
    `HTTP ${res.status} ${JSON.stringify(res.body)}`,
  ).toEqual({
    clientError: true,
    decision: null,
  });
  expect({ status: res.status, code: res.body.error?.code, details: res.body.error?.details }).toEqual({
    status: 400,
    code: "CONTRADICTORY_APPROVALS",
    details: { toolCallId: "call_w" },
  });
  // The answer is one openapi.yaml documents for the route.
  validateResponse({
    method: "POST",
    path: "/sessions/{id}/chat",
    status: res.status,
    body: res.body,
    contentType: res.headers.get("content-type") ?? "",
    headers: Object.fromEntries(res.headers),
  });
});
