/**
 * A chat message whose approvals answer a pending call and also a call that cannot take that
 * answer (one the run never asked about, or one decided otherwise already) is refused whole, as
 * a contradictory one is (chat-contradictory-approvals-refused-whole.test.ts): every approval
 * is checked before any is applied. Applied one by one, the pending call's approval was stored
 * (and its tool ran), then the next answered 404 or 409: the client was told its request
 * failed, yet half of it took effect.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

const part = (toolCallId: string, approved: boolean) => ({
  type: "dynamic-tool",
  toolName: "write_file",
  toolCallId,
  state: "approval-responded",
  input: { path: "a.txt", content: "hi" },
  approval: { id: toolCallId, approved },
});

/** A run in a new session waiting for the approval of `call_b`, its reply's first call `call_a` denied. */
async function waitingForSecondCall(): Promise<{ sessionId: string; runId: string }> {
  const write = (id: string) => ({ id, name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' });
  server.upstream.enqueue({ toolCalls: [write("call_a"), write("call_b")] });
  // Whatever happens next, the run may end (an approved call runs, the model is asked again).
  server.upstream.fallback = () => ({ text: "done" });
  const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
  const runId = (await server.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "write" } })).body.id;
  const pending = async (id: string) =>
    (await server.request("GET", `/runs/${runId}/approvals`)).body.items.some(
      (a: { toolCallId: string }) => a.toolCallId === id,
    );
  await until(() => pending("call_a"), Boolean, "call_a's approval request");
  const denied = await server.request("POST", `/runs/${runId}/approvals/call_a`, { body: { decision: "deny" } });
  expect(denied.status).toBe(200);
  await until(() => pending("call_b"), Boolean, "call_b's approval request");
  return { sessionId, runId };
}

for (const { name, second, status, code } of [
  { name: "a call the run never asked about", second: part("call_unknown", true), status: 404, code: "NOT_FOUND" },
  { name: "a call decided otherwise already", second: part("call_a", true), status: 409, code: "APPROVAL_CONFLICT" },
]) {
  it(`a chat message approving a pending call and ${name} is refused and decides nothing`, async () => {
    const { sessionId, runId } = await waitingForSecondCall();
    const res = await server.request("POST", `/sessions/${sessionId}/chat`, {
      body: {
        messages: [
          { id: "u1", role: "user", parts: [{ type: "text", text: "write" }] },
          { id: runId, role: "assistant", parts: [part("call_b", true), second] },
        ],
      },
    });
    const call = await server.ctx.store.toolCalls.status(runId, "call_b");
    expect({ status: res.status, code: res.body.error?.code, decision: call?.decision ?? null }).toEqual({
      status,
      code,
      decision: null,
    });
    validateResponse({
      method: "POST",
      path: "/sessions/{id}/chat",
      status: res.status,
      body: res.body,
      contentType: res.headers.get("content-type") ?? "",
      headers: Object.fromEntries(res.headers),
    });
    // The run still waits for call_b, which a later message can approve.
    expect((await server.request("GET", `/runs/${runId}`)).body.status).toBe("awaiting_approval");
  });
}
