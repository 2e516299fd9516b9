/**
 * The chat protocol driven by the AI SDK's own client code: `ai`'s AbstractChat (what
 * `useChat` wraps) over its DefaultChatTransport and stream reader, against a real server.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { assistant, NodeChat, texts, tools, until } from "../helpers/node-chat.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

async function chatFor(options: { approveAutomatically?: boolean } = {}) {
  const session = await server.request("POST", "/sessions", { body: {} });
  return {
    sessionId: session.body.id as string,
    chat: new NodeChat(`${server.url}/sessions/${session.body.id}/chat`, options),
  };
}

describe("the AI SDK chat protocol with the SDK's own client", () => {
  it("submit: a user message starts a run whose text streams into one assistant message", async () => {
    server.upstream.enqueue({ text: ["Hello ", "there"] });
    const { sessionId, chat } = await chatFor();
    await chat.sendMessage({ text: "hi" });
    await until("ready", () => chat.status === "ready");
    expect(chat.error).toBeUndefined();
    const reply = assistant(chat);
    expect(texts(reply)).toBe("Hello there");
    // The message is the run: its id is the run's id, and our own API has the same history.
    const runs = await server.request("GET", `/sessions/${sessionId}/runs`);
    expect(reply?.id).toBe(runs.body.items[0].id);
    const history = await server.request("GET", `/sessions/${sessionId}/messages`);
    expect(history.body.items.map((m: { content: string }) => m.content)).toEqual(["hi", "Hello there"]);
  });

  it("tool call and approval: the pending approval is the SDK's approval request, its answer continues the run", async () => {
    server.upstream.enqueue(
      {
        toolCalls: [
          { id: "call_ls", name: "list_files", arguments: "{}" },
          { id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"A"}' },
        ],
      },
      { text: "written" },
    );
    const { sessionId, chat } = await chatFor({ approveAutomatically: true });
    await chat.sendMessage({ text: "write a.txt" });
    await until("the approval request", () => tools(assistant(chat)).some((t) => t.state === "approval-requested"));
    await until("ready", () => chat.status === "ready");
    const [ls, write] = tools(assistant(chat));
    expect(ls).toMatchObject({ toolName: "list_files", state: "output-available" });
    expect(write).toMatchObject({
      toolName: "write_file",
      state: "approval-requested",
      input: { path: "a.txt", content: "A" },
      approval: { id: "call_w", requestReason: expect.any(String) },
    });
    const run = (await server.request("GET", `/sessions/${sessionId}`)).body.activeRunId;
    expect((await server.request("GET", `/runs/${run}`)).body.status).toBe("awaiting_approval");

    await chat.addToolApprovalResponse({ id: "call_w", approved: true });
    await until("the answer", () => texts(assistant(chat)).includes("written") && chat.status === "ready");
    expect(tools(assistant(chat)).map((t) => [t.toolName, t.state])).toEqual([
      ["list_files", "output-available"],
      ["write_file", "output-available"],
    ]);
    expect(chat.messages.filter((m) => m.role === "assistant")).toHaveLength(1);
    const session = (await server.request("GET", `/sessions/${sessionId}`)).body;
    expect(readFileSync(join(server.dir, "workspaces", session.workspace, "a.txt"), "utf8")).toBe("A");
    expect((await server.request("GET", `/runs/${run}`)).body).toMatchObject({
      status: "finished",
      stopReason: "complete",
    });
  });

  it("a denied call shows as denied and a failed call as an error; the run goes on", async () => {
    server.upstream.enqueue(
      {
        toolCalls: [
          { id: "call_r", name: "read_file", arguments: '{"path":"missing.txt"}' },
          { id: "call_sh", name: "shell", arguments: '{"command":"rm -rf /"}' },
        ],
      },
      { text: "ok, not then" },
    );
    const { sessionId, chat } = await chatFor({ approveAutomatically: true });
    await chat.sendMessage({ text: "try" });
    await until("the approval request", () => tools(assistant(chat)).some((t) => t.state === "approval-requested"));
    await until("ready", () => chat.status === "ready");
    await chat.addToolApprovalResponse({ id: "call_sh", approved: false, reason: "no" });
    await until("the answer", () => texts(assistant(chat)).includes("not then") && chat.status === "ready");
    const [read, shell] = tools(assistant(chat));
    expect(read).toMatchObject({
      toolName: "read_file",
      state: "output-error",
      errorText: expect.stringMatching(/missing/),
    });
    expect(shell).toMatchObject({ toolName: "shell", state: "output-denied" });
    const history = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items;
    expect(history.find((m: { toolCallId?: string }) => m.toolCallId === "call_sh")).toMatchObject({
      isError: true,
      metadata: { errorCode: "DENIED" },
    });
  });

  it("resume mid-run: another client's resumeStream replays the active run from the start, then follows it live", async () => {
    const hold = gate();
    server.upstream.enqueue({ text: ["first ", "part "], gate: hold.wait });
    const { sessionId, chat } = await chatFor();
    void chat.sendMessage({ text: "go" });
    await until("streamed text", () => texts(assistant(chat)) === "first part ");
    const other = new NodeChat(`${server.url}/sessions/${sessionId}/chat`);
    void other.resumeStream();
    await until("the replay", () => texts(assistant(other)) === "first part ");
    expect(other.status).toBe("streaming");
    hold.open();
    await until("both done", () => chat.status === "ready" && other.status === "ready");
    expect(assistant(other)?.id).toBe(assistant(chat)?.id);
    expect(other.messages).toHaveLength(1);
  });

  it("resume with no active run is 204: the client stays ready with nothing", async () => {
    const { sessionId, chat } = await chatFor();
    const res = await fetch(`${server.url}/sessions/${sessionId}/chat/stream`);
    expect(res.status).toBe(204);
    await chat.resumeStream();
    expect(chat.status).toBe("ready");
    expect(chat.messages).toEqual([]);
  });

  it("stop cancels the run: it finishes aborted, and nothing of the stopped turn is committed", async () => {
    const hold = gate();
    server.upstream.enqueue({ text: ["never ", "finished"], gate: hold.wait });
    const { sessionId, chat } = await chatFor();
    void chat.sendMessage({ text: "go" });
    await until("streamed text", () => texts(assistant(chat)).startsWith("never"));
    const runId = assistant(chat)?.id as string;
    await chat.stop();
    await server.ctx.manager.waitForFinish(runId);
    hold.open();
    expect((await server.request("GET", `/runs/${runId}`)).body).toMatchObject({ stopReason: "aborted" });
    const history = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items;
    expect(history.map((m: { role: string }) => m.role)).toEqual(["user"]);
  });
});
