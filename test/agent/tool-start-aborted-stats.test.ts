/**
 * Law 7c: a run cancelled while a tool's start is being written gives the call "aborted before
 * execution" and never runs the tool. The loop had already counted the call as a started tool:
 * stats.toolCalls said 1 tool call for a run that executed none. Now it is not counted.
 */
import { describe, expect, it } from "vitest";
import { Harness, testTool } from "../agent/harness.js";
import { toolCall } from "../fakes/scripted-model.js";

describe("a tool cancelled while its start is written", () => {
  it("is not counted as a tool execution the run started", async () => {
    const echo = testTool({ name: "echo" });
    let h: Harness;
    h = new Harness({
      tools: [echo],
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "a" })] }],
      onToolStart: () => h.abort(),
    });
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(echo.executions).toHaveLength(0);
    expect(h.resultOf("c1").metadata.errorCode).toBe("ABORTED");
    expect(h.resultOf("c1").content).toContain("aborted before execution");
    expect(result.stats.toolCalls).toBe(0);
    // Its result says so: observers count no execution of it.
    expect(h.ran.get("c1")).toBe(false);
  });

  it("a tool that ran says so with its result; a call denied does not", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      steps: [
        { toolCalls: [toolCall("c1", "echo", { text: "a" }), toolCall("c2", "echo", { text: "b" })] },
        { text: "done" },
      ],
      beforeToolCall: async ({ toolCall }) => (toolCall.id === "c1" ? { decision: "approve" } : { decision: "deny" }),
    });
    await h.run();
    expect(echo.executions).toHaveLength(1);
    expect([h.ran.get("c1"), h.ran.get("c2")]).toEqual([true, false]);
  });
});
