import { describe, expect, it } from "vitest";
import { toolOk } from "../../src/agent/tool.js";
import { toolCall } from "../fakes/scripted-model.js";
import { expectConsistent, Harness, recordingApproval, testTool } from "./harness.js";

const SECRET = "SECRET-db-password-hunter2";

describe("failures (law 8 and persistence)", () => {
  it("law 8: a throwing tool gets TOOL_EXECUTION_FAILED, later calls NOT_EXECUTED, the run errors with the original message, and the exception text is stored nowhere", async () => {
    const log: string[] = [];
    const boom = testTool({
      name: "boom",
      log,
      execute: async () => {
        throw new Error(`connection to postgres://admin:${SECRET}@db failed`);
      },
    });
    const echo = testTool({ name: "echo", log });
    const approval = recordingApproval(log);
    const h = new Harness({
      log,
      tools: [boom, echo],
      beforeToolCall: approval,
      steps: [
        {
          toolCalls: [
            toolCall("c1", "echo", { text: "before" }),
            toolCall("c2", "boom", { text: "x" }),
            toolCall("c3", "echo", { text: "after" }),
            toolCall("c4", "nope", {}),
          ],
        },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("TOOL_EXECUTION_FAILED");
    expect(result.error?.message).toContain(SECRET);
    expect(result.error?.message).toContain("boom");
    expect(h.resultOf("c1")).toMatchObject({ content: "echo ok", isError: false });
    expect(h.resultOf("c2")).toMatchObject({
      content: "tool execution failed",
      isError: true,
      metadata: { errorCode: "TOOL_EXECUTION_FAILED" },
    });
    for (const id of ["c3", "c4"]) {
      expect(h.resultOf(id)).toMatchObject({
        content: "not executed after an earlier failure",
        isError: true,
        metadata: { errorCode: "NOT_EXECUTED" },
      });
    }
    expect(echo.executions.map((e) => e.toolCallId)).toEqual(["c1"]);
    expect(approval.requests.map((r) => r.toolCall.id)).toEqual(["c1", "c2"]);
    expect(JSON.stringify(h.committed)).not.toContain(SECRET);
    expect(JSON.stringify(result.messages)).not.toContain(SECRET);
    expect(h.model.requests).toHaveLength(1);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 8: a throwing approval hook gets TOOL_EXECUTION_FAILED, runs nothing, later calls NOT_EXECUTED, and its text is stored nowhere", async () => {
    const echo = testTool({ name: "echo" });
    const approval = recordingApproval([], (request) => {
      if (request.toolCall.id === "c2") throw new Error(`approval store unreachable: ${SECRET}`);
      return { decision: "approve" };
    });
    const h = new Harness({
      tools: [echo],
      beforeToolCall: approval,
      steps: [
        {
          toolCalls: [
            toolCall("c1", "echo", { text: "1" }),
            toolCall("c2", "echo", { text: "2" }),
            toolCall("c3", "echo", { text: "3" }),
          ],
        },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("TOOL_EXECUTION_FAILED");
    expect(result.error?.message).toContain(SECRET);
    expect(echo.executions.map((e) => e.toolCallId)).toEqual(["c1"]);
    expect(h.eventsOf("tool.started").map((e) => e.toolCallId)).toEqual(["c1"]);
    expect(h.resultOf("c2")).toMatchObject({
      content: "tool execution failed",
      metadata: { errorCode: "TOOL_EXECUTION_FAILED" },
    });
    expect(h.resultOf("c3")).toMatchObject({
      content: "not executed after an earlier failure",
      metadata: { errorCode: "NOT_EXECUTED" },
    });
    expect(JSON.stringify(h.committed)).not.toContain(SECRET);
    expect(h.model.requests).toHaveLength(1);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 8: a non-Error thrown value is reported too, and still not stored", async () => {
    const boom = testTool({
      name: "boom",
      execute: async () => {
        throw `raw string ${SECRET}`;
      },
    });
    const h = new Harness({ tools: [boom], steps: [{ toolCalls: [toolCall("c1", "boom", { text: "x" })] }] });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.message).toContain(SECRET);
    expect(JSON.stringify(h.committed)).not.toContain(SECRET);
    expectConsistent(h, result);
  });

  it("persistence: a failed user-message commit ends the run with PERSISTENCE_FAILED before any model request", async () => {
    const h = new Harness({
      onCommit: () => {
        throw new Error("disk full");
      },
      steps: [],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("PERSISTENCE_FAILED");
    expect(result.error?.message).toContain("disk full");
    expect(result.messages).toEqual([]);
    expect(h.model.requests).toHaveLength(0);
    h.model.assertComplete();
  });

  it("persistence: after a failed assistant commit no approval is asked, no tool executes, and the model is not asked again", async () => {
    const log: string[] = [];
    const echo = testTool({ name: "echo", log });
    const approval = recordingApproval(log);
    const h = new Harness({
      log,
      tools: [echo],
      beforeToolCall: approval,
      onCommit: (message) => {
        if (message.role === "assistant") throw new Error("database is locked");
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("PERSISTENCE_FAILED");
    expect(result.error?.message).toMatch(/database is locked/);
    expect(approval.requests).toHaveLength(0);
    expect(echo.executions).toHaveLength(0);
    expect(h.eventsOf("tool.started")).toEqual([]);
    expect(log).toEqual(["commit:user", "commit:assistant"]);
    expect(result.messages.map((m) => m.role)).toEqual(["user"]);
    expect(result.stats.turns).toBe(0);
    expect(h.model.requests).toHaveLength(1);
    h.model.assertComplete();
  });

  it("persistence: a failed tool-result commit stops the loop: no later tool runs and the model is not asked again", async () => {
    const log: string[] = [];
    const echo = testTool({ name: "echo", log });
    const h = new Harness({
      log,
      tools: [echo],
      onCommit: (message) => {
        if (message.role === "tool") throw new Error("I/O error");
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" }), toolCall("c2", "echo", { text: "2" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("PERSISTENCE_FAILED");
    expect(echo.executions.map((e) => e.toolCallId)).toEqual(["c1"]);
    expect(log).toEqual(["commit:user", "commit:assistant", "start:c1", "end:c1", "commit:tool"]);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(h.model.requests).toHaveLength(1);
    h.model.assertComplete();
  });

  it("persistence: when the tool's start cannot be committed, the tool does not run and the run errors", async () => {
    const echo = testTool({ name: "echo" });
    const h = new Harness({
      tools: [echo],
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }],
      onToolStart: () => {
        throw new Error("event log unwritable");
      },
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("PERSISTENCE_FAILED");
    expect(result.error?.message).toContain("event log unwritable");
    expect(echo.executions).toHaveLength(0);
    expect(h.model.requests).toHaveLength(1);
    h.model.assertComplete();
  });

  it("emit only notifies: a host whose emit throws on every notice does not change the run", async () => {
    const echo = testTool({ name: "echo" });
    const steps = [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }, { text: "final words" }];
    const h = new Harness({ tools: [echo], steps });
    const result = await h.run({
      emit: () => {
        throw new Error("watchers unreachable");
      },
    });
    expect(result.stopReason).toBe("complete");
    expect(echo.executions).toHaveLength(1);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(result.messages.at(-1)?.content).toBe("final words");
    h.model.assertComplete();
  });

  it("persistence: result.messages holds only what commit accepted", async () => {
    const slowOk = testTool({ name: "echo", execute: async () => toolOk("fine") });
    const h = new Harness({
      tools: [slowOk],
      onCommit: (_message, index) => {
        if (index === 4) throw new Error("lost connection");
      },
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "1" })] }, { text: "final words" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("PERSISTENCE_FAILED");
    expect(h.commitCalls).toBe(4);
    expect(result.messages).toEqual(h.committed);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(JSON.stringify(result.messages)).not.toContain("final words");
    h.model.assertComplete();
  });
});
