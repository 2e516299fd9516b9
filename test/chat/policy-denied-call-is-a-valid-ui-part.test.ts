/**
 * A tool call the approval policy denies (no one was asked) as the AI SDK's own client folds it
 * from POST /sessions/{id}/chat: ai 7's UI message schema gives an `output-denied` tool part an
 * `approval` ({id, approved: false, reason?}), so the part must come with one: the SDK's own
 * policy denials send an automatic request, then a response denying it, then the denial. The
 * message useChat holds then passes the SDK's validateUIMessages (what an app runs on messages
 * it loads back), and the policy's reason is on the page.
 */
import { safeValidateUIMessages } from "ai";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assistant, NodeChat, texts, tools, until } from "../helpers/node-chat.js";
import { validateSchema } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

const denyingSession = async (): Promise<string> =>
  (await server.request("POST", "/sessions", { body: { approval: { tools: { write_file: "deny" } } } })).body.id;

const enqueueDeniedWrite = () =>
  server.upstream.enqueue(
    { toolCalls: [{ id: "call_deny", name: "write_file", arguments: '{"path":"a.txt","content":"A"}' }] },
    { text: "not allowed, then" },
  );

it("a call the session's policy denies folds into a UI message the SDK accepts, its reason shown", async () => {
  enqueueDeniedWrite();
  const chat = new NodeChat(`${server.url}/sessions/${await denyingSession()}/chat`, { approveAutomatically: true });
  await chat.sendMessage({ text: "write a.txt" });
  await until("the answer", () => chat.status === "ready" && texts(assistant(chat)) === "not allowed, then");
  expect(chat.error).toBeUndefined();

  const [part] = tools(assistant(chat));
  expect(part).toMatchObject({ toolName: "write_file", toolCallId: "call_deny", state: "output-denied" });
  // What ai 7 itself says a UI message may be (an output-denied part carries its denied approval).
  const validated = await safeValidateUIMessages({ messages: chat.messages });
  expect(validated.success ? "valid" : String(validated.error).slice(0, 400)).toBe("valid");
  // The user is told why: the policy's reason is on the part's denied approval.
  expect(part).toMatchObject({
    approval: {
      id: "call_deny",
      approved: false,
      isAutomatic: true,
      reason: expect.stringMatching(/policy denies write_file/),
    },
  });
});

it("the stream states the policy's denial as the spec describes it: an automatic request, its denial, then the output denied", async () => {
  enqueueDeniedWrite();
  const res = await fetch(`${server.url}/sessions/${await denyingSession()}/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "write a.txt" }] }] }),
  });
  const chunks = (await res.text())
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map(
      (line) => JSON.parse(line.slice("data: ".length)) as { type: string; toolCallId?: string; approvalId?: string },
    );
  for (const chunk of chunks) validateSchema("UiMessageChunk", chunk);
  const ofCall = chunks.filter((c) => c.toolCallId === "call_deny" || c.approvalId === "call_deny");
  expect(ofCall).toEqual([
    {
      type: "tool-input-available",
      toolCallId: "call_deny",
      toolName: "write_file",
      input: { path: "a.txt", content: "A" },
      dynamic: true,
    },
    { type: "tool-approval-request", approvalId: "call_deny", toolCallId: "call_deny", isAutomatic: true },
    {
      type: "tool-approval-response",
      approvalId: "call_deny",
      approved: false,
      reason: expect.stringMatching(/policy denies write_file/),
    },
    { type: "tool-output-denied", toolCallId: "call_deny" },
  ]);
});
