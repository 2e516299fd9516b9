import { describe, expect, it } from "vitest";
import { toolCall } from "../fakes/scripted-model.js";
import { assistantMessage, expectConsistent, Harness, testTool, toolMessage, userMessage } from "./harness.js";

const priorStats = { modelCalls: 1, toolCalls: 0, turns: 1, inputTokens: 10, outputTokens: 5, durationMs: 40 };

describe("resuming a run whose last commit is its final reply (law 2)", () => {
  it("completes without a model request and takes no pending input (the host keeps it, as after a live final turn)", async () => {
    const history = [userMessage("question"), assistantMessage("The answer is 42.")];
    // A spent turn budget does not matter: the run is done.
    const h = new Harness({ history, resume: true, maxTurns: 1, steps: [] });
    let asked = 0;
    const result = await h.run({
      priorStats,
      runStart: 0,
      pendingInput: async () => {
        asked++;
        return [{ id: "in_1", content: "also this" }];
      },
    });
    expect({
      stopReason: result.stopReason,
      stopDetail: result.stopDetail,
      error: result.error,
      modelCalls: result.stats.modelCalls,
      requests: h.model.requests.length,
      pendingAsked: asked,
      committed: h.committed.length,
    }).toEqual({
      stopReason: "complete",
      stopDetail: null,
      error: null,
      modelCalls: 1,
      requests: 0,
      pendingAsked: 0,
      committed: 0,
    });
    expectConsistent(h, result);
  });

  it("a last reply whose calls are all answered is no final reply: the model is asked with the results", async () => {
    const echo = testTool({ name: "echo" });
    const history = [
      userMessage("question"),
      assistantMessage("", [toolCall("c1", "echo", { text: "x" })]),
      toolMessage("c1", "echo ok"),
    ];
    const h = new Harness({ history, resume: true, tools: [echo], steps: [{ text: "done" }] });
    const result = await h.run({ priorStats, runStart: 0 });
    expect(result.stopReason).toBe("complete");
    expect(h.model.requests.map((r) => r.messages.map((m) => m.role))).toEqual([["user", "assistant", "tool"]]);
    expect(h.committed.map((m) => m.content)).toEqual(["done"]);
    expectConsistent(h, result);
  });
});
