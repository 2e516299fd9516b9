import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolOk } from "../../src/agent/tool.js";
import { withUniqueIds } from "../../src/agent/unique-tool-call-ids.js";
import { gate, settle } from "../fakes/gate.js";
import { toolCall } from "../fakes/scripted-model.js";
import { expectConsistent, expectEveryCallAnsweredOnce, Harness, recordingApproval, testTool } from "./harness.js";

describe("tool-call resolution and execution (laws 1, 4, 5, 6)", () => {
  it("law 5: an unknown tool is an UNKNOWN_TOOL result naming the available tools, and the loop goes on", async () => {
    const read = testTool({ name: "read_file" });
    const list = testTool({ name: "list_files" });
    const approval = recordingApproval([]);
    const h = new Harness({
      tools: [read, list],
      beforeToolCall: approval,
      steps: [{ toolCalls: [toolCall("c1", "delete_everything", {})] }, { text: "sorry" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    const unknown = h.resultOf("c1");
    expect(unknown).toMatchObject({ isError: true, metadata: { errorCode: "UNKNOWN_TOOL", retryable: true } });
    expect(unknown.content).toContain("delete_everything");
    expect(unknown.content).toContain("read_file");
    expect(unknown.content).toContain("list_files");
    expect(approval.requests).toHaveLength(0);
    expect(h.eventsOf("tool.started")).toEqual([]);
    expect(h.model.requests[1]?.messages.at(-1)).toMatchObject({ toolCallId: "c1", content: unknown.content });
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 5: unparseable JSON arguments are an INVALID_ARGUMENTS result, and the loop goes on", async () => {
    const read = testTool({ name: "read_file" });
    const approval = recordingApproval([]);
    const h = new Harness({
      tools: [read],
      beforeToolCall: approval,
      steps: [{ toolCalls: [toolCall("c1", "read_file", '{"text": "a.txt"')] }, { text: "let me fix that" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    const invalid = h.resultOf("c1");
    expect(invalid).toMatchObject({ isError: true, metadata: { errorCode: "INVALID_ARGUMENTS", retryable: true } });
    expect(invalid.content).toMatch(/^invalid arguments: .*JSON/);
    expect(read.executions).toHaveLength(0);
    expect(approval.requests).toHaveLength(0);
    expect(h.model.requests[1]?.messages.at(-1)).toMatchObject({ toolCallId: "c1", isError: true });
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 5 and 6: schema-invalid arguments are INVALID_ARGUMENTS naming the field, before any approval or side effect", async () => {
    const write = testTool({
      name: "write_file",
      schema: z.object({ path: z.string(), content: z.string() }),
    });
    const approval = recordingApproval([]);
    const h = new Harness({
      tools: [write],
      beforeToolCall: approval,
      steps: [
        { toolCalls: [toolCall("c1", "write_file", { path: "a.txt", content: 42 })] },
        { toolCalls: [toolCall("c2", "write_file", { path: "a.txt", content: "42" })] },
        { text: "written" },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    const invalid = h.resultOf("c1");
    expect(invalid.metadata.errorCode).toBe("INVALID_ARGUMENTS");
    expect(invalid.content).toMatch(/^invalid arguments: content: /);
    expect(invalid.content).not.toMatch(/path:/);
    // Only the repaired call was asked about and executed, with the parsed input.
    expect(approval.requests.map((r) => r.toolCall.id)).toEqual(["c2"]);
    expect(approval.requests[0]?.input).toEqual({ path: "a.txt", content: "42" });
    expect(write.executions).toEqual([{ toolCallId: "c2", input: { path: "a.txt", content: "42" } }]);
    expect(h.resultOf("c2").content).toBe("write_file ok");
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 6: the tool and the approval hook get the zod-parsed input (defaults applied), not the raw JSON", async () => {
    const list = testTool({
      name: "list_files",
      schema: z.object({ path: z.string().default("."), depth: z.number().int().default(1) }),
    });
    const approval = recordingApproval([]);
    const h = new Harness({
      tools: [list],
      beforeToolCall: approval,
      steps: [
        { toolCalls: [toolCall("c1", "list_files", ""), toolCall("c2", "list_files", { depth: 3 })] },
        { text: "ok" },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(list.executions.map((e) => e.input)).toEqual([
      { path: ".", depth: 1 },
      { path: ".", depth: 3 },
    ]);
    expect(approval.requests.map((r) => r.input)).toEqual([
      { path: ".", depth: 1 },
      { path: ".", depth: 3 },
    ]);
    expect(approval.requests[0]?.tool).toBe(list);
    h.model.assertComplete();
  });

  it("law 5: a denial is a DENIED result carrying the reason; the tool never runs and the loop goes on", async () => {
    const shell = testTool({ name: "shell" });
    const h = new Harness({
      tools: [shell],
      beforeToolCall: async () => ({ decision: "deny", reason: "not on a Friday" }),
      steps: [{ toolCalls: [toolCall("c1", "shell", { text: "rm -rf /" })] }, { text: "understood" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(shell.executions).toHaveLength(0);
    expect(h.eventsOf("tool.started")).toEqual([]);
    const denied = h.resultOf("c1");
    expect(denied).toMatchObject({ isError: true, metadata: { errorCode: "DENIED", retryable: false } });
    expect(denied.content).toContain("not on a Friday");
    expect(h.model.requests[1]?.messages.at(-1)).toMatchObject({ toolCallId: "c1", content: denied.content });
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 5: a denial without a reason is still a DENIED result, and a denial does not stop the later calls", async () => {
    const shell = testTool({ name: "shell" });
    const h = new Harness({
      tools: [shell],
      beforeToolCall: async ({ toolCall: call }) => (call.id === "c1" ? { decision: "deny" } : { decision: "approve" }),
      steps: [
        { toolCalls: [toolCall("c1", "shell", { text: "a" }), toolCall("c2", "shell", { text: "b" })] },
        { text: "ok" },
      ],
    });
    const result = await h.run();
    expect(h.resultOf("c1")).toMatchObject({ content: "tool call denied", metadata: { errorCode: "DENIED" } });
    expect(h.resultOf("c2")).toMatchObject({ content: "shell ok", isError: false });
    expect(shell.executions.map((e) => e.toolCallId)).toEqual(["c2"]);
    expectConsistent(h, result);
  });

  it("law 6: approval comes before execution, and calls run sequentially in the model's order", async () => {
    const log: string[] = [];
    const a = testTool({ name: "a", log });
    const b = testTool({ name: "b", log });
    const approval = recordingApproval(log);
    const h = new Harness({
      log,
      tools: [a, b],
      beforeToolCall: approval,
      steps: [
        {
          toolCalls: [
            toolCall("c1", "b", { text: "1" }),
            toolCall("c2", "a", { text: "2" }),
            toolCall("c3", "missing", {}),
            toolCall("c4", "a", "not json"),
            toolCall("c5", "b", { text: "5" }),
          ],
        },
        { text: "done" },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(log).toEqual([
      "commit:user",
      "commit:assistant",
      "approve:c1",
      "start:c1",
      "end:c1",
      "commit:tool",
      "approve:c2",
      "start:c2",
      "end:c2",
      "commit:tool",
      "commit:tool", // c3: unknown tool, no approval
      "commit:tool", // c4: invalid arguments, no approval
      "approve:c5",
      "start:c5",
      "end:c5",
      "commit:tool",
      "commit:assistant",
    ]);
    expect(h.toolResults().map((m) => m.toolCallId)).toEqual(["c1", "c2", "c3", "c4", "c5"]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 6: a second tool is neither approved nor started before the first one finished", async () => {
    const log: string[] = [];
    const firstStarted = gate();
    const releaseFirst = gate();
    const slow = testTool({
      name: "slow",
      log,
      execute: async () => {
        firstStarted.open();
        await releaseFirst.wait;
        return toolOk("slow done");
      },
    });
    const fast = testTool({ name: "fast", log });
    const approval = recordingApproval(log);
    const h = new Harness({
      log,
      tools: [slow, fast],
      beforeToolCall: approval,
      steps: [
        { toolCalls: [toolCall("c1", "slow", { text: "1" }), toolCall("c2", "fast", { text: "2" })] },
        { text: "done" },
      ],
    });
    const running = h.run();
    await firstStarted.wait;
    await settle();
    expect(approval.requests.map((r) => r.toolCall.id)).toEqual(["c1"]);
    expect(fast.executions).toHaveLength(0);
    expect(h.eventsOf("tool.started").map((e) => e.toolCallId)).toEqual(["c1"]);
    releaseFirst.open();
    const result = await running;
    expect(result.stopReason).toBe("complete");
    expect(log.filter((e) => !e.startsWith("commit"))).toEqual([
      "approve:c1",
      "start:c1",
      "end:c1",
      "approve:c2",
      "start:c2",
      "end:c2",
    ]);
    h.model.assertComplete();
  });

  it("law 6: nothing executes while approval is pending, and the approved tool starts only after the decision", async () => {
    const log: string[] = [];
    const decision = gate<{ decision: "approve" }>();
    const asked = gate();
    const write = testTool({ name: "write", log });
    const h = new Harness({
      log,
      tools: [write],
      beforeToolCall: async ({ toolCall: call }) => {
        log.push(`approve:${call.id}`);
        asked.open();
        return decision.wait;
      },
      steps: [{ toolCalls: [toolCall("c1", "write", { text: "1" })] }, { text: "done" }],
    });
    const running = h.run();
    await asked.wait;
    await settle();
    expect(write.executions).toHaveLength(0);
    expect(h.eventsOf("tool.started")).toEqual([]);
    decision.open({ decision: "approve" });
    const result = await running;
    expect(result.stopReason).toBe("complete");
    expect(log.filter((e) => !e.startsWith("commit"))).toEqual(["approve:c1", "start:c1", "end:c1"]);
  });

  it("law 5: a tool result records its metadata: error code, retryable, output size, truncation", async () => {
    const big = testTool({ name: "big", execute: async () => toolOk("x".repeat(50), true) });
    const h = new Harness({
      tools: [big],
      steps: [{ toolCalls: [toolCall("c1", "big", { text: "1" })] }, { text: "done" }],
    });
    const result = await h.run();
    expect(h.resultOf("c1").metadata).toMatchObject({
      errorCode: null,
      retryable: false,
      outputChars: 50,
      truncated: true,
    });
    expect(h.resultOf("c1").metadata.durationMs).toBeGreaterThanOrEqual(0);
    expectConsistent(h, result);
  });

  it("law 4: every tool call gets exactly one result across a mixed multi-turn run", async () => {
    const ok = testTool({ name: "ok" });
    const h = new Harness({
      tools: [ok],
      beforeToolCall: async ({ toolCall: call }) =>
        call.id.endsWith("d") ? { decision: "deny", reason: "nope" } : { decision: "approve" },
      steps: [
        { toolCalls: [toolCall("t1a", "ok", { text: "1" }), toolCall("t1d", "ok", { text: "2" })] },
        { text: "more", toolCalls: [toolCall("t2a", "unknown", {}), toolCall("t2b", "ok", "{")] },
        { toolCalls: [toolCall("t3a", "ok", { text: 3 })] },
        { text: "all done" },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(h.toolResults().map((m) => [m.toolCallId, m.metadata.errorCode])).toEqual([
      ["t1a", null],
      ["t1d", "DENIED"],
      ["t2a", "UNKNOWN_TOOL"],
      ["t2b", "INVALID_ARGUMENTS"],
      ["t3a", "INVALID_ARGUMENTS"],
    ]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 4: a reply repeating a tool call id gets the repeat renamed; both calls run and are answered", async () => {
    const ok = testTool({ name: "ok", execute: async (input) => toolOk(`ran ${input.text}`) });
    const h = new Harness({
      tools: [ok],
      steps: [
        { toolCalls: [toolCall("dup", "ok", { text: "1" }), toolCall("dup", "ok", { text: "2" })] },
        { text: "done" },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    const assistant = h.committed.find((m) => m.role === "assistant");
    expect(assistant?.role === "assistant" && assistant.toolCalls?.map((c) => c.id)).toEqual(["dup", "dup-2"]);
    expect(ok.executions).toEqual([
      { toolCallId: "dup", input: { text: "1" } },
      { toolCallId: "dup-2", input: { text: "2" } },
    ]);
    expect(h.resultOf("dup").content).toBe("ran 1");
    expect(h.resultOf("dup-2").content).toBe("ran 2");
    // The model is sent its calls under the ids their results answer.
    const sent = h.model.requests[1]?.messages ?? [];
    expect(sent.filter((m) => m.role === "tool").map((m) => m.role === "tool" && m.toolCallId)).toEqual([
      "dup",
      "dup-2",
    ]);
    expectEveryCallAnsweredOnce(h.fullHistory);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 4: a call reusing an id from an earlier turn of the run, or with an empty id, runs under a fresh id", async () => {
    const ok = testTool({ name: "ok", execute: async (input) => toolOk(`ran ${input.text}`) });
    const h = new Harness({
      tools: [ok],
      steps: [
        { toolCalls: [toolCall("call_0", "ok", { text: "first" })] },
        { toolCalls: [toolCall("call_0", "ok", { text: "second" }), toolCall("", "ok", { text: "third" })] },
        { text: "done" },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    const ids = h.committed.flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []).map((c) => c.id) : []));
    expect(ids).toEqual(["call_0", "call_0-2", "call-2"]);
    expect(ok.executions).toHaveLength(3);
    expect(h.resultOf("call_0").content).toBe("ran first");
    expect(h.resultOf("call_0-2").content).toBe("ran second");
    expect(h.resultOf("call-2").content).toBe("ran third");
    expectEveryCallAnsweredOnce(h.fullHistory);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 4: a call reusing an id from an earlier run of the session runs under a fresh id", async () => {
    const ok = testTool({ name: "ok" });
    const earlier = new Harness({
      tools: [ok],
      steps: [{ toolCalls: [toolCall("call_0", "ok", { text: "a" })] }, { text: "ok" }],
    });
    await earlier.run();
    const h = new Harness({
      tools: [ok],
      history: earlier.fullHistory,
      steps: [{ toolCalls: [toolCall("call_0", "ok", { text: "b" })] }, { text: "done" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(h.committed.flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []).map((c) => c.id) : []))).toEqual([
      "call_0-2",
    ]);
    expectEveryCallAnsweredOnce(h.fullHistory);
    h.model.assertComplete();
  });

  it("renaming keeps every id that is new, and gives the others the first free suffix", () => {
    const calls = (...ids: string[]) => ids.map((id) => ({ id, name: "ok", input: "{}" }));
    const ids = (result: { id: string }[]) => result.map((c) => c.id);
    expect(ids(withUniqueIds(calls("call_0", "call_0-3"), new Set(["call_0"])))).toEqual(["call_0-2", "call_0-3"]);
    expect(ids(withUniqueIds(calls("a", "a", "", ""), new Set()))).toEqual(["a", "a-2", "call-2", "call-3"]);
    expect(ids(withUniqueIds(calls("x", "y"), new Set(["z"])))).toEqual(["x", "y"]);
  });

  it("an id a client could not send back in an approval URL (too long, a dot segment, a slash) runs under a fresh one", () => {
    const calls = (...ids: string[]) => ids.map((id) => ({ id, name: "ok", input: "{}" }));
    const ids = (result: { id: string }[]) => result.map((c) => c.id);
    const long = `call_${"x".repeat(100)}`;
    expect(ids(withUniqueIds(calls(long, ".", "..", "a/b", "a b", "functions.get:0"), new Set()))).toEqual([
      "call-2",
      "call-3",
      "call-4",
      "call-5",
      "call-6",
      "functions.get:0",
    ]);
    expect(ids(withUniqueIds(calls("x".repeat(64)), new Set()))).toEqual(["x".repeat(64)]);
  });

  it("text with a lone surrogate is committed well-formed, and the model is later sent exactly what was stored", async () => {
    const echo = testTool({ name: "echo", execute: async () => toolOk("cut \ud83d here") });
    const h = new Harness({
      input: "user \udc00 input",
      tools: [echo],
      steps: [{ text: "half \ud800 emoji", toolCalls: [toolCall("c1", "echo", { text: "x" })] }, { text: "done" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    const [user, assistant, tool] = h.committed;
    expect(user?.content).toBe("user \ufffd input");
    expect(assistant?.content).toBe("half \ufffd emoji");
    expect(tool?.content).toBe("cut \ufffd here");
    const sentLater = JSON.stringify(h.model.requests[1]?.messages);
    expect(sentLater).toContain("half \ufffd emoji");
    expect(sentLater).toContain("cut \ufffd here");
    expect(sentLater).not.toMatch(/\\ud8/);
    h.model.assertComplete();
  });
});
