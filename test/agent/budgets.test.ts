import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ModelResult } from "../../src/agent/model.js";
import { toolOk } from "../../src/agent/tool.js";
import { toolCall } from "../fakes/scripted-model.js";
import { expectConsistent, Harness, testTool } from "./harness.js";

const echo = () => testTool({ name: "echo", readOnly: true });
const echoCall = (id: string) => toolCall(id, "echo", { text: id });

describe("budgets (budget_exhausted)", () => {
  it("a token budget stops before the next model request, and the detail names the figures", async () => {
    const h = new Harness({
      tools: [echo()],
      steps: [
        { toolCalls: [echoCall("c1")], usage: { inputTokens: 30_000, outputTokens: 1_200 } },
        { toolCalls: [echoCall("c2")], usage: { inputTokens: 19_000, outputTokens: 1_000 } },
        { text: "never asked" },
      ],
    });
    const result = await h.run({ budgets: { maxTokens: 50_000 } });
    expect(result.stopReason).toBe("budget_exhausted");
    expect(h.model.requests).toHaveLength(2);
    expect(result.stopDetail).toBe(
      "stopped before turn 3: this run used 51,200 of its 50,000 tokens; raise maxTokens or start a new run",
    );
    expect(h.resultOf("c2").isError).toBe(false);
    expectConsistent(h, result);
  });

  it("a tool-call budget closes the calls it will not run with a result, and stops the run", async () => {
    const tool = echo();
    const h = new Harness({ tools: [tool], steps: [{ toolCalls: [echoCall("c1"), echoCall("c2"), echoCall("c3")] }] });
    const result = await h.run({ budgets: { maxToolCalls: 1 } });
    expect(result.stopReason).toBe("budget_exhausted");
    expect(tool.executions.map((e) => e.toolCallId)).toEqual(["c1"]);
    for (const id of ["c2", "c3"]) {
      expect(h.resultOf(id)).toMatchObject({
        isError: true,
        content: "not executed: budget exhausted (this run started 1 of its 1 tool calls)",
        metadata: { errorCode: "BUDGET_EXHAUSTED" },
      });
    }
    expect(result.stopDetail).toBe(
      "stopped in turn 1 at tool call c2 (echo): this run started 1 of its 1 tool calls; raise maxToolCalls or start a new run",
    );
    expectConsistent(h, result);
  });

  it("a time budget during a long tool stops the tool and closes the remaining calls with results", async () => {
    const slow = testTool({
      name: "slow",
      schema: z.object({}),
      execute: (_input, { signal }) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve(toolOk("finished")), 10_000);
          signal.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve(toolOk("stopped early"));
          });
        }),
    });
    const tool = echo();
    const h = new Harness({
      tools: [slow, tool],
      steps: [{ toolCalls: [toolCall("long", "slow", {}), echoCall("c2"), echoCall("c3")] }],
    });
    const started = performance.now();
    const result = await h.run({ budgets: { maxDurationMs: 150 } });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.stopReason).toBe("budget_exhausted");
    // The tool that ran keeps its real result; the rest get theirs.
    expect(h.resultOf("long")).toMatchObject({ isError: false, content: "stopped early" });
    for (const id of ["c2", "c3"]) expect(h.resultOf(id).metadata.errorCode).toBe("BUDGET_EXHAUSTED");
    expect(tool.executions).toHaveLength(0);
    expect(result.stopDetail).toMatch(
      /^stopped in turn 1 at tool call long \(slow\): this run has run for [\d.]+ s of its 0\.2 s; raise maxDurationMs/,
    );
    expectConsistent(h, result);
  });

  it("a time budget during a model request ends the request, and the unfinished turn is dropped", async () => {
    const never = new Promise(() => {});
    const h = new Harness({ tools: [echo()], steps: [{ text: "thinking about it", gate: never }] });
    const result = await h.run({ budgets: { maxDurationMs: 100 } });
    expect(result.stopReason).toBe("budget_exhausted");
    expect(result.stopDetail).toMatch(
      /^stopped in turn 1: this run has run for [\d.]+ s of its 0\.1 s; raise maxDurationMs/,
    );
    // Law 3: only the user message was committed.
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
  });

  it("resuming keeps counting toward the same budgets", async () => {
    const h = new Harness({ resume: true, tools: [echo()], steps: [{ text: "never asked" }] });
    const priorStats = { modelCalls: 2, toolCalls: 2, turns: 2, inputTokens: 900, outputTokens: 150, durationMs: 5 };
    const result = await h.run({ priorStats, budgets: { maxTokens: 1_000 } });
    expect(result.stopReason).toBe("budget_exhausted");
    expect(result.stopDetail).toContain("used 1,050 of its 1,000 tokens");
    expect(h.model.requests).toHaveLength(0);
  });

  // A failure of a tool's or the model's own after the deadline fired is reported as that failure
  // (law 8), not as the budget's: only an abort (the signal's reason, an AbortError) is the
  // budget's. Before, any failure once the deadline had fired ended the run budget_exhausted,
  // with the failure dropped.
  describe("a failure after the time budget ran out", () => {
    /** Resolves once `signal` has fired: the deadline has passed when this settles. */
    const fired = (signal: AbortSignal) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
    const failingTool = (fail: (signal: AbortSignal) => Promise<never>) =>
      testTool({ name: "broken", schema: z.object({}), execute: (_input, { signal }) => fail(signal) });
    const runOf = (tool: ReturnType<typeof failingTool>) =>
      new Harness({ tools: [tool, echo()], steps: [{ toolCalls: [toolCall("c1", "broken", {}), echoCall("c2")] }] });

    it("a tool's own error is the tool's failure: the run ends error with it", async () => {
      const h = runOf(
        failingTool(async (signal) => {
          await fired(signal);
          throw new Error("EIO: i/o error, write 'out.bin'");
        }),
      );
      const result = await h.run({ budgets: { maxDurationMs: 50 } });
      expect({ stopReason: result.stopReason, error: result.error }).toEqual({
        stopReason: "error",
        error: { code: "TOOL_EXECUTION_FAILED", message: "tool broken failed: EIO: i/o error, write 'out.bin'" },
      });
      expect(h.resultOf("c1").content).toBe("tool execution failed");
      expect(h.resultOf("c2").metadata.errorCode).not.toBe("BUDGET_EXHAUSTED");
      expectConsistent(h, result);
    });

    it("a tool that throws its signal's reason was stopped by the budget", async () => {
      const h = runOf(
        failingTool(async (signal) => {
          await fired(signal);
          signal.throwIfAborted();
          throw new Error("unreachable");
        }),
      );
      const result = await h.run({ budgets: { maxDurationMs: 50 } });
      expect({ stopReason: result.stopReason, error: result.error ?? null }).toEqual({
        stopReason: "budget_exhausted",
        error: null,
      });
      expect(h.resultOf("c2").metadata.errorCode).toBe("BUDGET_EXHAUSTED");
      expectConsistent(h, result);
    });

    it("a tool whose awaited work rejects with an AbortError was stopped by the budget", async () => {
      const h = runOf(failingTool((signal) => sleep(60_000, undefined, { signal }) as Promise<never>));
      const result = await h.run({ budgets: { maxDurationMs: 50 } });
      expect(result.stopReason).toBe("budget_exhausted");
      expect(h.resultOf("c2").metadata.errorCode).toBe("BUDGET_EXHAUSTED");
      expectConsistent(h, result);
    });

    it("a model failure other than the abort is the model's: the run ends error with it", async () => {
      const upstream = async ({ signal }: { signal: AbortSignal }): Promise<ModelResult> => {
        await fired(signal);
        const timing = { latencyMs: 1, firstTokenMs: null };
        return { ok: false, code: "MODEL_UPSTREAM", message: "the upstream answered 502", timing };
      };
      const h = new Harness({ tools: [echo()], steps: [upstream] });
      const result = await h.run({ budgets: { maxDurationMs: 50 } });
      expect({ stopReason: result.stopReason, error: result.error }).toEqual({
        stopReason: "error",
        error: { code: "MODEL_UPSTREAM", message: "the upstream answered 502" },
      });
      expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    });
  });
});
