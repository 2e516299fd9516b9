import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolError } from "../../src/agent/tool.js";
import { toolCall } from "../fakes/scripted-model.js";
import { assistantMessage, expectConsistent, Harness, testTool, toolMessage, userMessage } from "./harness.js";

describe("stop reasons and completion (laws 1, 2, 3, 9)", () => {
  it("law 2: a reply without tool calls completes the run and commits the user and assistant messages", async () => {
    const h = new Harness({ input: "hi", steps: [{ text: "Hello there" }] });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(result.error).toBeNull();
    expect(h.committed.map((m) => [m.role, m.content])).toEqual([
      ["user", "hi"],
      ["assistant", "Hello there"],
    ]);
    expect(h.committed[1]).not.toHaveProperty("toolCalls");
    expect(h.model.requests[0]?.messages.map((m) => m.content)).toEqual(["hi"]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 2: a reply with text and tool calls does not stop the loop; the results go back to the model", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      steps: [{ text: "let me check", toolCalls: [toolCall("c1", "echo", { text: "x" })] }, { text: "done" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(echo.executions).toEqual([{ toolCallId: "c1", input: { text: "x" } }]);
    const second = h.model.requests[1]?.messages ?? [];
    expect(second.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(second[1]).toMatchObject({ content: "let me check", toolCalls: [{ id: "c1", name: "echo" }] });
    expect(second[2]).toMatchObject({ role: "tool", toolCallId: "c1", content: "echo ok", isError: false });
    expect(h.committed.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 2: tool calls without any text also continue the loop", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "x" })] }, { text: "done" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(h.committed[1]).toMatchObject({ role: "assistant", content: "", toolCalls: [{ id: "c1" }] });
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 2: a response with neither text nor tool calls is an error (EMPTY_RESPONSE) and nothing is committed for that turn", async () => {
    const h = new Harness({ input: "hi", steps: [{ text: "", toolCalls: [] }] });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("EMPTY_RESPONSE");
    expect(result.error?.message).toMatch(/neither text nor tool calls/);
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 2: a response of only white space counts as no text (EMPTY_RESPONSE), not as a blank answer", async () => {
    const h = new Harness({ input: "hi", steps: [{ text: "  \n\t", toolCalls: [] }] });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("EMPTY_RESPONSE");
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    h.model.assertComplete();
  });

  it("law 2: an empty response in a later turn keeps the earlier turns and commits nothing for itself", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "x" })] }, {}],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("EMPTY_RESPONSE");
    expect(h.committed.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 3 and 9: a failed model request is an error with its code and message, and nothing of the turn is committed", async () => {
    const h = new Harness({
      steps: [{ error: { code: "MODEL_RATE_LIMITED", message: "rate limited by upstream; retry in 20s" } }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error).toEqual({ code: "MODEL_RATE_LIMITED", message: "rate limited by upstream; retry in 20s" });
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 3 and 9: a stream that streamed text and then failed leaves none of that text in the session", async () => {
    const h = new Harness({
      steps: [
        (request) => {
          request.onTextDelta?.("half an ans");
          return {
            ok: false,
            code: "MODEL_UPSTREAM",
            message: "the stream broke",
            timing: { latencyMs: 1, firstTokenMs: 0 },
          };
        },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("MODEL_UPSTREAM");
    expect(h.eventsOf("text.delta").map((e) => e.text)).toEqual(["half an ans"]);
    expect(JSON.stringify(h.committed)).not.toContain("half an ans");
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    h.model.assertComplete();
  });

  it.each([
    ["MODEL_LENGTH", "the reply was cut off at the output token limit"],
    ["MODEL_CONTENT_FILTER", "the reply was blocked by the content filter"],
    ["MODEL_UNSUPPORTED_FINISH", "the model stopped for an unknown reason: weird"],
  ] as const)(
    "law 9: a model failure %s stops the run with error and its message, nothing committed",
    async (code, message) => {
      const h = new Harness({ steps: [{ error: { code, message } }] });
      const result = await h.run();
      expect(result).toMatchObject({ stopReason: "error", error: { code, message } });
      expect(h.committed.map((m) => m.role)).toEqual(["user"]);
      h.model.assertComplete();
    },
  );

  it("law 9: max_turns stops the run after this many model requests, even though the model still calls tools", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      maxTurns: 2,
      steps: [
        { toolCalls: [toolCall("c1", "echo", { text: "1" })] },
        { toolCalls: [toolCall("c2", "echo", { text: "2" })] },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("max_turns");
    expect(result.error).toBeNull();
    expect(h.model.requests).toHaveLength(2);
    // The last turn's tool calls were still executed and answered.
    expect(echo.executions.map((e) => e.toolCallId)).toEqual(["c1", "c2"]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 9: a model that stops calling tools in its last allowed turn completes rather than hitting max_turns", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      maxTurns: 2,
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }, { text: "finished" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    h.model.assertComplete();
  });

  it("law 9: max_turns counts this run's model requests only, not the assistant turns of the restored history", async () => {
    const history = [];
    for (let i = 0; i < 6; i++) {
      history.push(userMessage(`q${i}`));
      history.push(assistantMessage(`calling ${i}`, [toolCall(`old${i}`, "echo", { text: "o" })]));
      history.push(toolMessage(`old${i}`, "old result"));
      history.push(assistantMessage(`answer ${i}`));
    }
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      history,
      tools: [echo],
      maxTurns: 2,
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }, { text: "done" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(result.stats.modelCalls).toBe(2);
    expect(h.model.requests[0]?.messages).toHaveLength(history.length + 1);
    h.model.assertComplete();
  });

  it("law 9: when resuming, priorStats.modelCalls counts against maxTurns", async () => {
    const history = [userMessage("go"), assistantMessage("", [toolCall("c1", "echo", { text: "x" })])];
    const echo = testTool({ name: "echo" });
    const h = new Harness({ history, resume: true, tools: [echo], maxTurns: 3, steps: [{ text: "only one more" }] });
    const result = await h.run({
      priorStats: { modelCalls: 2, toolCalls: 0, turns: 1, inputTokens: 10, outputTokens: 5, durationMs: 40 },
    });
    expect(result.stopReason).toBe("complete");
    expect(h.model.requests).toHaveLength(1);
    expect(result.stats.modelCalls).toBe(3);

    const spent = new Harness({ history, resume: true, tools: [echo], maxTurns: 2, steps: [] });
    const spentResult = await spent.run({
      priorStats: { modelCalls: 2, toolCalls: 0, turns: 1, inputTokens: 10, outputTokens: 5, durationMs: 40 },
    });
    expect(spentResult.stopReason).toBe("max_turns");
    expect(spent.model.requests).toHaveLength(0);
    // The pending call still got its result before the budget stopped the run.
    expect(spent.resultOf("c1").content).toBe("echo ok");
    expectConsistent(spent, spentResult);
    spent.model.assertComplete();
  });

  it("law 9: maxTurns 0 makes no model request and stops with max_turns", async () => {
    const h = new Harness({ maxTurns: 0, steps: [] });
    const result = await h.run();
    expect(result.stopReason).toBe("max_turns");
    expect(h.model.requests).toHaveLength(0);
    h.model.assertComplete();
  });

  it("law 1: the model gets only serialisable tool specs (name, description, JSON Schema), never the tool table", async () => {
    const write = testTool({
      name: "write_file",
      schema: z.object({ path: z.string(), content: z.string() }),
    });
    const h = new Harness({ tools: [write], system: "be brief", steps: [{ text: "ok" }] });
    await h.run({ modelName: "gpt-test" });
    const request = h.model.requests[0];
    expect(request?.system).toBe("be brief");
    expect(request?.model).toBe("gpt-test");
    expect(request?.tools).toHaveLength(1);
    const spec = request?.tools[0];
    expect(Object.keys(spec ?? {}).sort()).toEqual(["description", "name", "parameters"]);
    expect(spec).toMatchObject({
      name: "write_file",
      description: "the write_file test tool",
      parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } } },
    });
    expect(JSON.parse(JSON.stringify(request?.tools))).toEqual(request?.tools);
    expect(write.executions).toHaveLength(0);
  });

  it("law 1: the host never invents a tool call: every execution and every result answers a call the model made", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      steps: [
        { toolCalls: [toolCall("m1", "echo", { text: "a" }), toolCall("m2", "nope", {})] },
        { toolCalls: [toolCall("m3", "echo", { text: "b" })] },
        { text: "done" },
      ],
    });
    const result = await h.run();
    const proposed = h.committed.flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []) : []));
    expect(proposed.map((c) => c.id)).toEqual(["m1", "m2", "m3"]);
    expect(h.toolResults().map((m) => m.toolCallId)).toEqual(["m1", "m2", "m3"]);
    expect(echo.executions.map((e) => e.toolCallId)).toEqual(["m1", "m3"]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 5: a tool failure value is a result the model sees, and the loop continues", async () => {
    const read = testTool({
      name: "read_file",
      execute: async () => toolError("FILE_NOT_FOUND", "no such file: a.txt", true),
    });
    const h = new Harness({
      tools: [read],
      steps: [{ toolCalls: [toolCall("c1", "read_file", { text: "a.txt" })] }, { text: "the file is missing" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(result.error).toBeNull();
    const failure = h.resultOf("c1");
    expect(failure).toMatchObject({
      content: "no such file: a.txt",
      isError: true,
      metadata: { errorCode: "FILE_NOT_FOUND", retryable: true },
    });
    expect(h.model.requests[1]?.messages.at(-1)).toMatchObject({ role: "tool", toolCallId: "c1", isError: true });
    expectConsistent(h, result);
    h.model.assertComplete();
  });
});
