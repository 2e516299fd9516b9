/**
 * A coding-agent chat (the AI SDK's own chat client, README's setup with
 * `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`, and the README's
 * advice for long chats: `prepareSendMessagesRequest` sending just the last message) where the
 * model reads a dozen files (read_file caps each at 100 KB) and then proposes a write_file,
 * which asks for approval.
 *
 * The chat stream sends every tool result in full as `tool-output-available`, so the run's one
 * assistant message holds ~1.1 MB of outputs, and approving posts that message back (it is the
 * last message: the approval is one of its parts): over BODY_LIMIT_BYTES (1 MiB), under the
 * chat's own CHAT_BODY_LIMIT_BYTES (16 MiB). The approval gets in and the run continues (the
 * file is written, the answer streams), whatever the earlier results of the same run weigh.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from "ai";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assistant, MemoryState, texts, tools, until } from "../helpers/node-chat.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

/** useChat as the README sets it up, sending only the last message (its advice for long chats). */
class LastMessageChat extends AbstractChat<UIMessage> {
  constructor(api: string) {
    super({
      state: new MemoryState(),
      transport: new DefaultChatTransport({
        api,
        prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({
          body: { id, messages: messages.slice(-1), trigger, messageId },
        }),
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  }
}

it("approving a write after a dozen file reads in the same run continues the run", async () => {
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const workspace = join(server.dir, "workspaces", session.workspace);
  mkdirSync(workspace, { recursive: true });
  const calls = [];
  for (let i = 0; i < 12; i++) {
    // 90,000 bytes: under read_file's 100 KB cap, so each is read whole.
    writeFileSync(join(workspace, `src${i}.txt`), `${"x".repeat(99)}\n`.repeat(900));
    calls.push({ id: `call_read${i}`, name: "read_file", arguments: JSON.stringify({ path: `src${i}.txt` }) });
  }
  calls.push({ id: "call_write", name: "write_file", arguments: '{"path":"summary.txt","content":"12 files"}' });
  server.upstream.enqueue({ toolCalls: calls }, { text: "summary written" });

  const chat = new LastMessageChat(`${server.url}/sessions/${session.id}/chat`);
  await chat.sendMessage({ text: "read every src file and write a summary" });
  await until(
    "the approval request",
    () => chat.status === "ready" && tools(assistant(chat)).some((t) => t.state === "approval-requested"),
    20_000,
  );
  const runId = assistant(chat)?.id as string;
  expect((await server.request("GET", `/runs/${runId}`)).body.status).toBe("awaiting_approval");

  await chat.addToolApprovalResponse({ id: "call_write", approved: true });
  await until(
    "the answer or an error",
    () => chat.status === "error" || (chat.status === "ready" && texts(assistant(chat)).includes("summary written")),
    20_000,
  );
  expect(chat.error?.message).toBeUndefined();
  expect(tools(assistant(chat)).find((t) => t.toolCallId === "call_write")?.state).toBe("output-available");
  await server.ctx.manager.waitForFinish(runId);
  expect((await server.request("GET", `/runs/${runId}`)).body).toMatchObject({ stopReason: "complete" });
  expect(readFileSync(join(workspace, "summary.txt"), "utf8")).toBe("12 files");
}, 60_000);
