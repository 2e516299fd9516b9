/**
 * The chat's stream echoes a tool call's arguments as the part's `input`, parsed. A call whose
 * arguments nest deeply (a model's mistake, or one steered by text it read) is shown as a failed
 * call, and from then on every request `useChat` posts carries that input back: a body nesting
 * deeper than the server's own limit (64) would be refused 400 INVALID_BODY, and a later
 * approval in the same run could never be posted (the assistant message holds the input even
 * when only the last message is sent, as the README advises). So arguments nesting deeper than
 * a body can carry back inside its message are echoed as their raw text; up to that depth they
 * are parsed.
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

/** `{"path":[[[...]]]}`: arguments nesting `levels` deep (valid JSON, invalid for read_file). */
const nested = (levels: number) => `{"path":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`;

/**
 * The body `useChat` posts nests its parts' inputs 5 levels down (body, messages, message,
 * parts, part): 59 levels is the deepest input a 64-level body carries back.
 */
for (const { levels, shown } of [
  { levels: 59, shown: "parsed" },
  { levels: 60, shown: "as its raw text" },
]) {
  it(`an approval posted after a call with arguments nesting ${levels} levels (shown ${shown}) reaches the run, which goes on`, async () => {
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_deep", name: "read_file", arguments: nested(levels) }] },
      { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"A"}' }] },
      { text: "written" },
    );
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const chat = new NodeChat(`${server.url}/sessions/${session.id}/chat`, { approveAutomatically: true });
    await chat.sendMessage({ text: "go" });
    await until("the approval request", () => chat.status === "ready" && tools(assistant(chat)).length === 2);
    const [deep, write] = tools(assistant(chat));
    expect([deep?.toolCallId, deep?.state, write?.toolCallId, write?.state]).toEqual([
      "call_deep",
      "output-error",
      "call_w",
      "approval-requested",
    ]);
    expect(deep?.input).toEqual(levels === 60 ? nested(levels) : JSON.parse(nested(levels)));

    await chat.addToolApprovalResponse({ id: "call_w", approved: true });
    await until("the run's end", () => chat.status === "ready" || chat.status === "error");
    expect(chat.error?.message).toBeUndefined();
    expect(texts(assistant(chat))).toBe("written");
    const runs = (await server.request("GET", `/sessions/${session.id}/runs`)).body.items;
    expect(runs[0]).toMatchObject({ status: "finished", stopReason: "complete" });
  });
}
