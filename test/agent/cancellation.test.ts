import { describe, expect, it } from "vitest";
import type { ToolCallDecision } from "../../src/agent/approval.js";
import { toolOk } from "../../src/agent/tool.js";
import { gate, settle } from "../fakes/gate.js";
import { toolCall } from "../fakes/scripted-model.js";
import { assistantMessage, expectConsistent, Harness, recordingApproval, testTool, userMessage } from "./harness.js";

const ABORTED_TEXT = "aborted before execution: the run was cancelled";

describe("cancellation checkpoints (law 7)", () => {
  it("law 7a: a run cancelled before it starts records nothing: commit is never called and the model never asked", async () => {
    const h = new Harness({ input: "do it", steps: [] });
    h.abort();
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeNull();
    expect(h.commitCalls).toBe(0);
    expect(result.messages).toEqual([]);
    expect(h.model.requests).toHaveLength(0);
    expect(h.events).toEqual([]);
    h.model.assertComplete();
  });

  it("law 7b: cancelled while the model streams, a stream that then ends normally is dropped: no assistant message, stop reason aborted", async () => {
    const streaming = gate();
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      steps: [
        {
          text: "I will run echo",
          toolCalls: [toolCall("c1", "echo", { text: "x" })],
          gate: streaming.wait,
          onAbort: "ignore",
        },
      ],
    });
    const running = h.run();
    await h.model.requestArrived(0);
    h.abort();
    streaming.open();
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    expect(JSON.stringify(h.committed)).not.toContain("I will run echo");
    expect(echo.executions).toHaveLength(0);
    expect(h.eventsOf("tool.started")).toEqual([]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 7b: a text-only reply that ends normally after the cancel is also dropped, not committed as a final answer", async () => {
    const streaming = gate();
    const h = new Harness({ steps: [{ text: "the final answer", gate: streaming.wait, onAbort: "ignore" }] });
    const running = h.run();
    await h.model.requestArrived(0);
    h.abort();
    streaming.open();
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    h.model.assertComplete();
  });

  it("law 7b: a model that honours the signal (MODEL_ABORTED) ends the run aborted, not error, with nothing committed for the turn", async () => {
    const streaming = gate();
    const h = new Harness({ steps: [{ text: "first second", gate: streaming.wait }] });
    const running = h.run();
    await h.model.requestArrived(0);
    h.abort();
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeNull();
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    // The first fragment had streamed before the cancel; it is not in the session.
    expect(h.eventsOf("text.delta").map((e) => e.text)).toEqual(["first "]);
    expect(JSON.stringify(h.committed)).not.toContain("first");
    h.model.assertComplete();
  });

  it("law 7b: a model error that follows a cancel (a torn connection) is reported as aborted, not error", async () => {
    const streaming = gate();
    const h = new Harness({
      steps: [{ error: { code: "MODEL_UPSTREAM", message: "socket hang up" }, gate: streaming.wait }],
    });
    const running = h.run();
    await h.model.requestArrived(0);
    h.abort();
    streaming.open();
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeNull();
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
  });

  it("law 7c: cancelled while approval is pending, no tool starts and the current and remaining calls get ABORTED results", async () => {
    const log: string[] = [];
    const asked = gate();
    const echo = testTool({ name: "echo", log });
    const approval = recordingApproval(log, () => {
      asked.open();
      return new Promise<ToolCallDecision>(() => {}); // nobody ever answers
    });
    const h = new Harness({
      log,
      tools: [echo],
      beforeToolCall: approval,
      steps: [
        {
          toolCalls: [
            toolCall("c1", "echo", { text: "1" }),
            toolCall("c2", "echo", { text: "2" }),
            toolCall("c3", "nope", {}),
          ],
        },
      ],
    });
    const running = h.run();
    await asked.wait;
    h.abort();
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(echo.executions).toHaveLength(0);
    expect(h.eventsOf("tool.started")).toEqual([]);
    expect(approval.requests.map((r) => r.toolCall.id)).toEqual(["c1"]);
    for (const id of ["c1", "c2", "c3"]) {
      expect(h.resultOf(id)).toMatchObject({
        content: ABORTED_TEXT,
        isError: true,
        metadata: { errorCode: "ABORTED", retryable: false },
      });
    }
    expect(h.model.requests).toHaveLength(1);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 7c: cancelled inside beforeToolCall, which then approves anyway, still runs nothing", async () => {
    const echo = testTool({ name: "echo" });
    let h: Harness | undefined;
    const approval = recordingApproval([], () => {
      h?.abort();
      return { decision: "approve" };
    });
    h = new Harness({
      tools: [echo],
      beforeToolCall: approval,
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" }), toolCall("c2", "echo", { text: "2" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(echo.executions).toHaveLength(0);
    expect(h.eventsOf("tool.started")).toEqual([]);
    expect(approval.requests).toHaveLength(1);
    expect(h.resultOf("c1").metadata.errorCode).toBe("ABORTED");
    expect(h.resultOf("c2").metadata.errorCode).toBe("ABORTED");
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 7c: a cancel that lands just after the approval resolved, before the loop resumed, still starts no tool", async () => {
    const echo = testTool({ name: "echo" });
    let h: Harness | undefined;
    h = new Harness({
      tools: [echo],
      // Not an async function: the loop gets this very promise. The cancel is queued by a
      // reaction registered before the loop's own, so it fires after the approval settled
      // (the race with the cancel is lost) but before the loop continues.
      beforeToolCall: () => {
        const approved = Promise.resolve<ToolCallDecision>({ decision: "approve" });
        approved.then(() => queueMicrotask(() => h?.abort()));
        return approved;
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" }), toolCall("c2", "echo", { text: "2" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(echo.executions).toHaveLength(0);
    expect(h.eventsOf("tool.started")).toEqual([]);
    expect(h.toolResults().map((m) => m.metadata.errorCode)).toEqual(["ABORTED", "ABORTED"]);
    expectConsistent(h, result);
  });

  it("law 7c: a cancel that makes the approval hook reject (e.g. its wait is torn down) ends aborted, not error", async () => {
    const echo = testTool({ name: "echo" });
    const asked = gate();
    const approval = recordingApproval([], ({ signal }) => {
      asked.open();
      return new Promise<ToolCallDecision>((_, reject) => {
        signal.addEventListener("abort", () => reject(new Error("approval wait cancelled")));
      });
    });
    const h = new Harness({
      tools: [echo],
      beforeToolCall: approval,
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }],
    });
    const running = h.run();
    await asked.wait;
    h.abort();
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(result.error).toBeNull();
    expect(h.resultOf("c1").metadata.errorCode).toBe("ABORTED");
    expect(echo.executions).toHaveLength(0);
  });

  it("law 7c: a denial that resolves after the cancel is recorded as ABORTED, and nothing runs", async () => {
    const echo = testTool({ name: "echo" });
    let h: Harness | undefined;
    h = new Harness({
      tools: [echo],
      beforeToolCall: async () => {
        h?.abort();
        return { decision: "deny", reason: "no" };
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(h.resultOf("c1").metadata.errorCode).toBe("ABORTED");
    expect(echo.executions).toHaveLength(0);
  });

  it("law 7c: cancelled after the assistant commit but before the first tool, no approval is asked and every call is ABORTED", async () => {
    const log: string[] = [];
    const echo = testTool({ name: "echo", log });
    const approval = recordingApproval(log);
    let h: Harness | undefined;
    h = new Harness({
      log,
      tools: [echo],
      beforeToolCall: approval,
      onCommit: (message) => {
        if (message.role === "assistant") h?.abort();
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" }), toolCall("c2", "echo", { text: "2" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(approval.requests).toHaveLength(0);
    expect(echo.executions).toHaveLength(0);
    expect(h.committed.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expect(h.toolResults().map((m) => m.metadata.errorCode)).toEqual(["ABORTED", "ABORTED"]);
    expectConsistent(h, result);
  });

  it("law 7d: cancelled during a started tool, its real result is kept, the rest are ABORTED, and no further model request is made", async () => {
    const log: string[] = [];
    const started = gate();
    const finish = gate();
    const slow = testTool({
      name: "slow",
      log,
      execute: async (input, context) => {
        started.open();
        await finish.wait;
        return toolOk(`real result for ${input.text}; signal aborted: ${context.signal.aborted}`);
      },
    });
    const echo = testTool({ name: "echo", log });
    const approval = recordingApproval(log);
    const h = new Harness({
      log,
      tools: [slow, echo],
      beforeToolCall: approval,
      steps: [
        {
          toolCalls: [
            toolCall("c1", "slow", { text: "one" }),
            toolCall("c2", "echo", { text: "2" }),
            toolCall("c3", "slow", { text: "3" }),
          ],
        },
      ],
    });
    const running = h.run();
    await started.wait;
    h.abort();
    finish.open();
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(h.resultOf("c1")).toMatchObject({
      content: "real result for one; signal aborted: true",
      isError: false,
      metadata: { errorCode: null },
    });
    expect(h.resultOf("c2")).toMatchObject({ content: ABORTED_TEXT, metadata: { errorCode: "ABORTED" } });
    expect(h.resultOf("c3")).toMatchObject({ content: ABORTED_TEXT, metadata: { errorCode: "ABORTED" } });
    expect(echo.executions).toHaveLength(0);
    expect(slow.executions.map((e) => e.toolCallId)).toEqual(["c1"]);
    expect(approval.requests.map((r) => r.toolCall.id)).toEqual(["c1"]);
    expect(h.eventsOf("tool.started").map((e) => e.toolCallId)).toEqual(["c1"]);
    expect(h.model.requests).toHaveLength(1);
    expect(log).toEqual([
      "commit:user",
      "commit:assistant",
      "approve:c1",
      "start:c1",
      "end:c1",
      "commit:tool",
      "commit:tool",
      "commit:tool",
    ]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 7d: cancelled during the last tool of a turn, its result is kept and the model is not asked again", async () => {
    const started = gate();
    const finish = gate();
    const slow = testTool({
      name: "slow",
      execute: async () => {
        started.open();
        await finish.wait;
        return toolOk("wrote the file");
      },
    });
    const h = new Harness({ tools: [slow], steps: [{ toolCalls: [toolCall("c1", "slow", { text: "x" })] }] });
    const running = h.run();
    await started.wait;
    h.abort();
    finish.open();
    const result = await running;
    expect(result.stopReason).toBe("aborted");
    expect(h.resultOf("c1").content).toBe("wrote the file");
    expect(h.model.requests).toHaveLength(1);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 7d: a tool that throws because the run was cancelled still ends the run aborted; the rest are ABORTED, not NOT_EXECUTED", async () => {
    const started = gate();
    const slow = testTool({
      name: "slow",
      execute: (_input, context) => {
        started.open();
        return new Promise((_, reject) => {
          context.signal.addEventListener("abort", () => reject(new Error("killed by cancel: SECRET-42")));
        });
      },
    });
    const h = new Harness({
      tools: [slow],
      steps: [{ toolCalls: [toolCall("c1", "slow", { text: "1" }), toolCall("c2", "slow", { text: "2" })] }],
    });
    const running = h.run();
    await started.wait;
    h.abort();
    const result = await running;
    // DELETE promises that `run.finished` with `aborted` always follows (product brief).
    expect(result.stopReason).toBe("aborted");
    expect(h.resultOf("c1").isError).toBe(true);
    expect(h.resultOf("c2").metadata.errorCode).toBe("ABORTED");
    expect(JSON.stringify(h.committed)).not.toContain("SECRET-42");
    expectConsistent(h, result);
  });

  it("law 7: a cancel between turns stops before the next model request", async () => {
    const echo = testTool({ name: "echo" });
    let h: Harness | undefined;
    h = new Harness({
      tools: [echo],
      onCommit: (message) => {
        if (message.role === "tool") h?.abort();
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(h.resultOf("c1").content).toBe("echo ok");
    expect(h.model.requests).toHaveLength(1);
    h.model.assertComplete();
  });

  it("law 7: a cancel while the last call's result (a denial) is being committed stops before the next model request", async () => {
    const echo = testTool({ name: "echo" });
    let h: Harness | undefined;
    h = new Harness({
      tools: [echo],
      beforeToolCall: async () => ({ decision: "deny", reason: "no" }),
      onCommit: (message) => {
        if (message.role === "tool") h?.abort();
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(h.resultOf("c1").metadata.errorCode).toBe("DENIED");
    expect(h.model.requests).toHaveLength(1);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 7: when resuming a cancelled run, the pending calls are closed with ABORTED results and nothing runs", async () => {
    const echo = testTool({ name: "echo" });
    const history = [userMessage("go"), assistantMessage("", [toolCall("p1", "echo", { text: "x" })])];
    const h = new Harness({ history, resume: true, tools: [echo], steps: [] });
    h.abort();
    const result = await h.run();
    expect(result.stopReason).toBe("aborted");
    expect(h.resultOf("p1").metadata.errorCode).toBe("ABORTED");
    expect(echo.executions).toHaveLength(0);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 6 and 7c: the loop waits on a pending approval (no tool, no timeout of its own) until the cancel releases it", async () => {
    const asked = gate();
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      beforeToolCall: () => {
        asked.open();
        return new Promise<ToolCallDecision>(() => {});
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }],
    });
    let settled = false;
    const running = h.run().then((r) => {
      settled = true;
      return r;
    });
    await asked.wait;
    await settle();
    expect(settled).toBe(false);
    h.abort();
    await running;
    expect(settled).toBe(true);
  });
});
