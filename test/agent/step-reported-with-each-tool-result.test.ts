/**
 * A turn's step is reported with each of its tool results, just before the result is committed
 * (a host holding steps for its next write stores them together), so that while a later call of
 * the turn waits (for approval, or a long tool) the step lists every result committed so far.
 * Results committed in a row with nothing waited for between them (closing ones, those past the
 * tool-call cap) are reported with the turn's last call only, and no report repeats the one before.
 */
import { describe, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import type { StepTrace } from "../../src/agent/step-trace.js";
import { toolCall } from "../fakes/scripted-model.js";
import { assistantMessage, Harness, testTool, toolMessage, userMessage } from "./harness.js";

const echo = () => testTool({ name: "echo" });
const calls = (...ids: string[]) => ids.map((id) => toolCall(id, "echo", { text: id }));
/** `step:<turn>:<the ids of its tools>`, as the log records a report. */
const logStep = (log: string[]) => (step: StepTrace) => {
  log.push(`step:${step.turn}:${step.tools.map((t) => t.toolCallId).join(",")}`);
};

describe("a turn's step reported with its tool results", () => {
  it("goes out just before each result is committed, listing it and the results before it", async () => {
    const log: string[] = [];
    const h = new Harness({ tools: [echo()], log, steps: [{ toolCalls: calls("c1", "c2") }, { text: "done" }] });
    await h.run({ onStep: logStep(log) });
    expect(log).toEqual([
      "commit:user",
      "step:1:",
      "commit:assistant",
      "step:1:c1",
      "commit:tool",
      "step:1:c1,c2",
      "commit:tool",
      "step:2:",
      "commit:assistant",
    ]);
  });

  it("a one-call turn is reported twice: its model part, then with its result (not again after)", async () => {
    const log: string[] = [];
    const h = new Harness({ tools: [echo()], log, steps: [{ toolCalls: calls("c1") }, { text: "done" }] });
    await h.run({ onStep: logStep(log) });
    expect(log.filter((line) => line.startsWith("step:"))).toEqual(["step:1:", "step:1:c1", "step:2:"]);
  });

  it("results past the tool-call cap are reported once, with the turn's last call", async () => {
    const log: string[] = [];
    const h = new Harness({
      tools: [echo()],
      log,
      steps: [{ toolCalls: calls("c1", "c2", "c3", "c4", "c5") }, { text: "done" }],
    });
    await h.run({ maxToolCallsPerTurn: 2, onStep: logStep(log) });
    expect(log.slice(log.indexOf("step:1:c1,c2"))).toEqual([
      "step:1:c1,c2",
      "commit:tool",
      "commit:tool",
      "commit:tool",
      "step:1:c1,c2,c3,c4,c5",
      "commit:tool",
      "step:2:",
      "commit:assistant",
    ]);
  });

  it("calls closed as aborted are reported once, with the turn's last call", async () => {
    const log: string[] = [];
    const h: Harness = new Harness({
      tools: [echo()],
      log,
      beforeToolCall: async () => {
        h.abort();
        return { decision: "approve" };
      },
      steps: [{ toolCalls: calls("a", "b", "c") }],
    });
    const result = await h.run({ onStep: logStep(log) });
    expect(result.stopReason).toBe("aborted");
    expect(log.filter((line) => line.startsWith("step:"))).toEqual(["step:1:", "step:1:a,b,c"]);
    expect(log.at(-2)).toBe("step:1:a,b,c");
  });

  it("a commit that fails in a row leaves the trace reported once more, whole, as the turn ends", async () => {
    const log: string[] = [];
    const h = new Harness({
      tools: [echo()],
      log,
      onCommit: (message) => {
        if (message.role === "tool" && message.toolCallId === "c3") throw new Error("disk full");
      },
      steps: [{ toolCalls: calls("c1", "c2", "c3", "c4") }],
    });
    const result = await h.run({ maxToolCallsPerTurn: 1, onStep: logStep(log) });
    expect(result.error?.code).toBe("PERSISTENCE_FAILED");
    expect(log.filter((line) => line.startsWith("step:"))).toEqual(["step:1:", "step:1:c1", "step:1:c1,c2,c3"]);
  });

  it("a resumed turn's step is reported with each pending call's result, the answered ones listed first", async () => {
    const log: string[] = [];
    const prior: StepTrace = {
      turn: 1,
      context: { messageCount: 1, estimatedTokens: 1, trimmedCount: 0, includedFiles: [] },
      model: { latencyMs: 1, firstTokenMs: null, finishReason: "tool_calls", usage: null, error: null },
      tools: [],
    };
    const h = new Harness({
      tools: [echo()],
      log,
      resume: true,
      history: [userMessage("go"), assistantMessage("", calls("a", "b", "c")), toolMessage("a", "echo ok")],
      steps: [{ text: "done" }],
    });
    await h.run({ priorStep: prior, priorStats: { ...emptyStats(), modelCalls: 1, turns: 1 }, onStep: logStep(log) });
    expect(log).toEqual(["step:1:a,b", "commit:tool", "step:1:a,b,c", "commit:tool", "step:2:", "commit:assistant"]);
  });
});
