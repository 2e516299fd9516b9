/**
 * When the run's wall-time budget runs out while a tool executes, the tool is stopped and the
 * run ends `budget_exhausted`; its stop detail names the call that was running then (not the
 * next one, which never started), whether the stopped tool throws or returns a result.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolOk } from "../../src/agent/tool.js";
import { toolCall } from "../fakes/scripted-model.js";
import { expectConsistent, Harness, testTool } from "./harness.js";

/** A tool that runs until its signal fires, then throws the signal's reason or returns a result. */
const untilStopped = (name: string, onStop: "throw" | "return") =>
  testTool({
    name,
    schema: z.object({}),
    execute: (_input, { signal }) =>
      new Promise((resolve, reject) => {
        signal.addEventListener("abort", () =>
          onStop === "throw" ? reject(signal.reason) : resolve(toolOk("stopped early")),
        );
      }),
  });

describe("a time budget that runs out during a tool", () => {
  for (const onStop of ["throw", "return"] as const) {
    it(`names the running call in the stop detail (the stopped tool ${onStop}s)`, async () => {
      const list = testTool({ name: "list_files", readOnly: true });
      const h = new Harness({
        tools: [untilStopped("shell", onStop), list],
        steps: [{ toolCalls: [toolCall("call_s", "shell", {}), toolCall("call_t", "list_files", {})] }],
      });
      const result = await h.run({ budgets: { maxDurationMs: 100 } });
      expect(result.stopReason).toBe("budget_exhausted");
      expect(list.executions).toHaveLength(0);
      expect(h.resultOf("call_t").metadata.errorCode).toBe("BUDGET_EXHAUSTED");
      expect(result.stopDetail).toMatch(/^stopped in turn 1 at tool call call_s \(shell\): this run has run for /);
      expectConsistent(h, result);
    });
  }
});
