/**
 * A reply with several calls, the first needing approval, driven by the AI SDK's own chat with
 * the README's setup (`sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`):
 * the SDK posts an approval once every call it shows has an answer or a result, so a later call
 * shown too early (waiting for its input's use) kept the approval from being posted: the chat
 * stood `ready` and the run waited for its approval's timeout. And a message of the user's
 * refused as busy while an approval waited stayed last on the page: the approval posted after
 * it (`sendMessage()`, naming the assistant's message) was read as a new message and refused
 * again, so the run waited for its timeout; the message `messageId` names is now the one read.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { assistant, NodeChat, texts, tools, until } from "../helpers/node-chat.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

async function chat() {
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  return new NodeChat(`${server.url}/sessions/${session.id}/chat`, { approveAutomatically: true });
}

it("an approval of a reply's first call, a call without approval after it, is posted and the run goes on", async () => {
  server.upstream.enqueue(
    {
      toolCalls: [
        { id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"A"}' },
        { id: "call_ls", name: "list_files", arguments: "{}" },
      ],
    },
    { text: "written" },
  );
  const c = await chat();
  await c.sendMessage({ text: "write a.txt" });
  await until("the approval request", () => c.status === "ready" && tools(assistant(c)).length > 0);
  expect(tools(assistant(c)).map((t) => [t.toolName, t.state])).toEqual([["write_file", "approval-requested"]]);
  await c.addToolApprovalResponse({ id: "call_w", approved: true });
  await until("the answer", () => c.status === "ready" && texts(assistant(c)).includes("written"));
  expect(tools(assistant(c)).map((t) => [t.toolName, t.state])).toEqual([
    ["write_file", "output-available"],
    ["list_files", "output-available"],
  ]);
});

it("two calls needing approval in one reply: the second is asked once the first is answered", async () => {
  server.upstream.enqueue(
    {
      toolCalls: [
        { id: "call_a", name: "write_file", arguments: '{"path":"a.txt","content":"A"}' },
        { id: "call_b", name: "write_file", arguments: '{"path":"b.txt","content":"B"}' },
      ],
    },
    { text: "both written" },
  );
  const c = await chat();
  await c.sendMessage({ text: "write two" });
  await until("the first request", () => c.status === "ready" && tools(assistant(c)).length > 0);
  await c.addToolApprovalResponse({ id: "call_a", approved: true });
  await until("the second request", () =>
    tools(assistant(c)).some((t) => t.toolCallId === "call_b" && t.state === "approval-requested"),
  );
  await until("ready", () => c.status === "ready");
  await c.addToolApprovalResponse({ id: "call_b", approved: true });
  await until("the answer", () => c.status === "ready" && texts(assistant(c)).includes("both written"));
});

it("an approval answered after a message refused as busy is posted with sendMessage() and the run goes on", async () => {
  server.upstream.enqueue(
    { toolCalls: [{ id: "call_q", name: "write_file", arguments: '{"path":"q.txt","content":"Q"}' }] },
    { text: "q written" },
  );
  const c = await chat();
  await c.sendMessage({ text: "write q.txt" });
  await until("the approval request", () => c.status === "ready" && tools(assistant(c)).length > 0);
  // A message typed while the approval waits: refused (the run goes on), it stays on the page, last.
  await c.sendMessage({ text: "are you there?" });
  await until("the refusal", () => c.status === "error");
  expect(c.messages.at(-1)?.role).toBe("user");
  await c.addToolApprovalResponse({ id: "call_q", approved: true });
  // The SDK does not post it by itself (the last message is not the assistant's): the page does.
  await c.sendMessage();
  await until("the answer", () => c.status === "ready" && texts(assistant(c)).includes("q written"));
  expect(tools(assistant(c)).map((t) => [t.toolName, t.state])).toEqual([["write_file", "output-available"]]);
});
