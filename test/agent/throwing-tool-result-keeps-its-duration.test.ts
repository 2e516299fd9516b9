import { setTimeout as sleep } from "node:timers/promises";
import { expect, it } from "vitest";
import { toolCall } from "../fakes/scripted-model.js";
import { Harness, recordingApproval, testTool } from "./harness.js";

// A tool that ran, then threw, is recorded like any tool that ran: its result's durationMs is
// the time it ran (as for a tool that returned, or one stopped by a cancel), not 0 as if it
// had never started. Operators read that figure to find slow tools; one that fails after a
// long wait (a network timeout) is the one they look for.
it("a tool that throws after running gets a result whose durationMs counts the time it ran", async () => {
  const log: string[] = [];
  let ranMs = 0;
  const slowFailure = testTool({
    name: "slow_failure",
    log,
    execute: async () => {
      const started = performance.now();
      await sleep(30);
      ranMs = performance.now() - started;
      throw new Error("upstream timed out");
    },
  });
  const h = new Harness({
    log,
    tools: [slowFailure],
    beforeToolCall: recordingApproval(log),
    steps: [{ toolCalls: [toolCall("c1", "slow_failure", { text: "x" })] }],
  });
  const result = await h.run();
  expect(result.stopReason).toBe("error");
  expect(ranMs).toBeGreaterThan(0);
  const metadata = h.resultOf("c1")?.metadata as { errorCode: string; durationMs: number };
  expect(metadata.errorCode).toBe("TOOL_EXECUTION_FAILED");
  expect(metadata.durationMs).toBeGreaterThanOrEqual(Math.floor(ranMs));
});
