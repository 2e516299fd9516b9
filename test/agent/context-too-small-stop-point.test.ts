/**
 * A run whose context no longer fits before its second model request is stopped before turn 2
 * (turn 1 finished: its reply and tool result are committed, and no second request is made).
 * Its stop point and stopDetail said "in turn 1", naming a turn that completed without trouble
 * (and "in turn 1" for an input too large, though no request was made). Now "before turn N".
 */
import { describe, expect, it } from "vitest";
import { toolOk } from "../../src/agent/tool.js";
import { toolCall } from "../fakes/scripted-model.js";
import { Harness, testTool } from "./harness.js";

describe("CONTEXT_TOO_SMALL names the turn it stopped before", () => {
  it("a context that outgrows contextMaxChars after turn 1 is reported before turn 2, not in turn 1", async () => {
    const big = testTool({ name: "echo", execute: async () => toolOk("r".repeat(100)) });
    const h = new Harness({
      tools: [big],
      input: "q",
      contextMaxChars: 50,
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "a" })] }],
    });
    const result = await h.run();
    expect(result.error?.code).toBe("CONTEXT_TOO_SMALL");
    // Turn 1 completed (its request, reply and result); turn 2 was never requested.
    expect(h.model.requests).toHaveLength(1);
    expect(h.resultOf("c1").isError).toBe(false);
    expect(result.stopPoint).toEqual({ phase: "before_turn", turn: 2 });
    expect(result.stopDetail).toMatch(/^stopped before turn 2: contextMaxChars 50 is too small/);
  });

  it("an input too large for contextMaxChars is reported before turn 1 (no request was made)", async () => {
    const h = new Harness({ input: "a question of 27 characters", contextMaxChars: 10, steps: [] });
    const result = await h.run();
    expect(result.error?.code).toBe("CONTEXT_TOO_SMALL");
    expect(h.model.requests).toHaveLength(0);
    expect(result.stopPoint).toEqual({ phase: "before_turn", turn: 1 });
    expect(result.stopDetail).toMatch(/^stopped before turn 1: /);
  });
});
