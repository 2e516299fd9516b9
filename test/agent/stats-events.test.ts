import { describe, expect, it } from "vitest";
import type { StepTrace } from "../../src/agent/step-trace.js";
import { toolCall } from "../fakes/scripted-model.js";
import { expectConsistent, Harness, testTool, userMessage } from "./harness.js";

describe("stats and events", () => {
  it("stats: modelCalls, toolCalls, turns and tokens summed from usage; durationMs >= 0", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      beforeToolCall: async ({ toolCall: call }) =>
        call.id === "denied" ? { decision: "deny" } : { decision: "approve" },
      steps: [
        {
          toolCalls: [toolCall("c1", "echo", { text: "1" }), toolCall("c2", "echo", { text: "2" })],
          usage: { inputTokens: 100, outputTokens: 10 },
        },
        {
          toolCalls: [toolCall("denied", "echo", { text: "3" }), toolCall("bad", "echo", "{")],
          usage: { inputTokens: 150, outputTokens: 20 },
        },
        { text: "done", usage: { inputTokens: 200, outputTokens: 30 } },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(result.stats).toMatchObject({
      modelCalls: 3,
      toolCalls: 2, // executed tools only: the denied and the invalid call never ran
      turns: 3,
      inputTokens: 450,
      outputTokens: 60,
    });
    expect(result.stats.durationMs).toBeGreaterThanOrEqual(0);
    expect(Number.isInteger(result.stats.durationMs)).toBe(true);
    h.model.assertComplete();
  });

  it("stats: a failed model request counts as a model call and its usage counts, but it is not a turn", async () => {
    const h = new Harness({
      steps: [
        {
          error: { code: "MODEL_UPSTREAM", message: "502 from upstream" },
          usage: { inputTokens: 7, outputTokens: 3 },
        },
      ],
    });
    const result = await h.run();
    expect(result.stats).toMatchObject({ modelCalls: 1, turns: 0, toolCalls: 0, inputTokens: 7, outputTokens: 3 });
  });

  it("stats: resuming adds to priorStats, including its duration", async () => {
    const h = new Harness({
      resume: true,
      history: [userMessage("go")],
      steps: [{ text: "hi", usage: { inputTokens: 5, outputTokens: 1 } }],
    });
    const result = await h.run({
      priorStats: { modelCalls: 2, toolCalls: 4, turns: 2, inputTokens: 1000, outputTokens: 100, durationMs: 5000 },
    });
    expect(result.stats).toMatchObject({ modelCalls: 3, toolCalls: 4, turns: 3, inputTokens: 1005, outputTokens: 101 });
    expect(result.stats.durationMs).toBeGreaterThanOrEqual(5000);
  });

  it("events: turn.started per model request with its number, text.delta in order concatenating to the committed text, tool.started only for executed tools", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      beforeToolCall: async ({ toolCall: call }) =>
        call.id === "denied" ? { decision: "deny" } : { decision: "approve" },
      steps: [
        {
          text: "Let me look at that",
          toolCalls: [
            toolCall("run1", "echo", { text: "1" }),
            toolCall("denied", "echo", { text: "2" }),
            toolCall("unknown", "nope", {}),
            toolCall("invalid", "echo", "{"),
            toolCall("run2", "echo", { text: "5" }),
          ],
        },
        { text: "Here is the final answer." },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(h.events.map((e) => e.type)).toEqual([
      "turn.started",
      "text.delta",
      "text.delta",
      "tool.started",
      "tool.started",
      "turn.started",
      "text.delta",
      "text.delta",
    ]);
    expect(h.eventsOf("turn.started").map((e) => e.turn)).toEqual([1, 2]);
    expect(h.eventsOf("tool.started")).toEqual([
      { type: "tool.started", toolCallId: "run1", tool: "echo" },
      { type: "tool.started", toolCallId: "run2", tool: "echo" },
    ]);
    const deltas = h.eventsOf("text.delta").map((e) => e.text);
    const assistantTexts = h.committed.filter((m) => m.role === "assistant").map((m) => m.content);
    expect(deltas.join("")).toBe(assistantTexts.join(""));
    expect(deltas.slice(0, 2).join("")).toBe("Let me look at that");
    expect(deltas.slice(2).join("")).toBe("Here is the final answer.");
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("events: a tool.started event is emitted before the tool runs", async () => {
    let h: Harness | undefined;
    let sawStartedEvent = false;
    const echo = testTool({
      name: "echo",
      execute: async (_input, context) => {
        sawStartedEvent = !!h?.eventsOf("tool.started").some((e) => e.toolCallId === context.toolCallId);
        return { ok: true, output: "ok" };
      },
    });
    h = new Harness({ tools: [echo], steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }, { text: "ok" }] });
    await h.run();
    expect(sawStartedEvent).toBe(true);
  });

  it("events: turn numbers continue from priorStats when resuming", async () => {
    const h = new Harness({ resume: true, history: [userMessage("go")], steps: [{ text: "hi" }] });
    await h.run({
      priorStats: { modelCalls: 4, toolCalls: 0, turns: 4, inputTokens: 0, outputTokens: 0, durationMs: 0 },
    });
    expect(h.eventsOf("turn.started").map((e) => e.turn)).toEqual([5]);
  });

  it("step trace: onStep reports each turn's context, finish reason, usage and tool outcomes", async () => {
    const echo = testTool({ name: "echo" });
    const steps: StepTrace[] = [];
    const h = new Harness({
      tools: [echo],
      steps: [
        {
          toolCalls: [toolCall("c1", "echo", { text: "1" }), toolCall("c2", "nope", {})],
          usage: { inputTokens: 9, outputTokens: 2 },
        },
        { text: "ok" },
      ],
    });
    await h.run({ onStep: (step) => steps.push(structuredClone(step)) });
    // Turn 1 is reported with its model part before its tools run (so a crash mid-tool keeps
    // the usage), then with each result (the last report is whole); turn 2 has no tools and is
    // reported once.
    expect(steps.map((s) => s.turn)).toEqual([1, 1, 1, 2]);
    expect(steps[0]).toMatchObject({
      model: { finishReason: "tool_calls", usage: { inputTokens: 9, outputTokens: 2 } },
      tools: [],
    });
    steps.shift();
    expect(steps[0]?.tools.map((t) => t.toolCallId)).toEqual(["c1"]);
    steps.shift();
    expect(steps[0]).toMatchObject({
      context: { messageCount: 1, trimmedCount: 0 },
      model: { finishReason: "tool_calls", usage: { inputTokens: 9, outputTokens: 2 }, error: null },
      tools: [
        { toolCallId: "c1", tool: "echo", status: "ok", errorCode: null },
        { toolCallId: "c2", tool: "nope", status: "error", errorCode: "UNKNOWN_TOOL" },
      ],
    });
    expect(steps[1]).toMatchObject({ context: { messageCount: 4 }, model: { finishReason: "stop" }, tools: [] });
  });
});
