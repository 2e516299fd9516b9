import { describe, expect, it } from "vitest";
import { assertValidHistory, InvalidHistoryError, pendingToolCalls } from "../../src/agent/history.js";
import type { AgentMessage } from "../../src/agent/messages.js";
import { toolCall } from "../fakes/scripted-model.js";
import {
  assistantMessage,
  expectConsistent,
  Harness,
  recordingApproval,
  testTool,
  toolMessage,
  userMessage,
} from "./harness.js";

/** Runs the loop on `history` and returns the error it throws (failing if it does not). */
async function refusal(history: AgentMessage[], options: { resume?: boolean } = {}) {
  const h = new Harness({ history, resume: options.resume, steps: [] });
  const error = await h.run().then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(InvalidHistoryError);
  expect(h.commitCalls).toBe(0);
  expect(h.model.requests).toHaveLength(0);
  expect(h.events).toEqual([]);
  return error as InvalidHistoryError;
}

describe("history validation (law 4)", () => {
  it("law 4: a history with a tool call lacking its result is refused, naming the id, and nothing happens", async () => {
    const history = [
      userMessage("a"),
      assistantMessage("", [toolCall("has", "echo"), toolCall("lacks", "echo")]),
      toolMessage("has", "fine"),
      assistantMessage("answer"),
      userMessage("next"),
    ];
    const error = await refusal(history);
    expect(error.code).toBe("INVALID_HISTORY");
    expect(error.ids).toEqual(["lacks"]);
    expect(error.message).toMatch(/tool calls without a result: lacks/);
  });

  it("law 4: a history with a tool result without its call is refused, naming the id", async () => {
    const history = [userMessage("a"), assistantMessage("hi"), toolMessage("ghost", "boo")];
    const error = await refusal(history);
    expect(error.ids).toEqual(["ghost"]);
    expect(error.message).toMatch(/tool results without a call: ghost/);
  });

  it("law 4: a tool call with two results is refused, naming the id", async () => {
    const history = [
      userMessage("a"),
      assistantMessage("", [toolCall("twice", "echo")]),
      toolMessage("twice", "one"),
      toolMessage("twice", "two"),
    ];
    const error = await refusal(history);
    expect(error.ids).toEqual(["twice"]);
    expect(error.message).toMatch(/more than one result: twice/);
  });

  it("law 4: a result separated from its call by another message is refused (results follow their assistant message)", async () => {
    const history = [
      userMessage("a"),
      assistantMessage("", [toolCall("late", "echo")]),
      userMessage("interjection"),
      toolMessage("late", "too late"),
    ];
    const error = await refusal(history);
    expect(error.ids.sort()).toEqual(["late", "late"]);
    expect(error.message).toMatch(/without a result: late/);
    expect(error.message).toMatch(/without a call: late/);
  });

  it("law 4: a pending tail is refused when a new input starts a run (only a resumed run may end with open calls)", async () => {
    const history = [userMessage("a"), assistantMessage("", [toolCall("open1", "echo"), toolCall("open2", "echo")])];
    const error = await refusal(history);
    expect(error.ids).toEqual(["open1", "open2"]);
  });

  it("law 4: a broken history is refused even when resuming; only the last assistant's calls may be pending", async () => {
    const history = [
      userMessage("a"),
      assistantMessage("", [toolCall("old", "echo")]),
      assistantMessage("", [toolCall("tail", "echo")]),
    ];
    const error = await refusal(history, { resume: true });
    expect(error.ids).toEqual(["old"]);
  });

  it("law 4: the validator accepts a well-formed history and, with allowPendingTail, an open tail", () => {
    const good = [
      userMessage("a"),
      assistantMessage("", [toolCall("x", "echo")]),
      toolMessage("x", "ok"),
      assistantMessage("done"),
    ];
    expect(() => assertValidHistory(good)).not.toThrow();
    const tail = [...good, userMessage("b"), assistantMessage("", [toolCall("y", "echo")])];
    expect(() => assertValidHistory(tail)).toThrow(InvalidHistoryError);
    expect(() => assertValidHistory(tail, { allowPendingTail: true })).not.toThrow();
    expect(pendingToolCalls(tail).map((c) => c.id)).toEqual(["y"]);
    expect(pendingToolCalls(good)).toEqual([]);
  });

  it("law 4: resuming executes the pending calls of the tail first, then asks the model with their results", async () => {
    const log: string[] = [];
    const echo = testTool({ name: "echo", log });
    const approval = recordingApproval(log);
    const history = [
      userMessage("go"),
      assistantMessage("working", [
        toolCall("p1", "echo", { text: "1" }),
        toolCall("p2", "echo", { text: "2" }),
        toolCall("p3", "echo", { text: "3" }),
      ]),
      toolMessage("p1", "already answered before the restart"),
    ];
    const h = new Harness({
      history,
      resume: true,
      log,
      tools: [echo],
      beforeToolCall: approval,
      steps: [{ text: "all done" }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(echo.executions.map((e) => e.toolCallId)).toEqual(["p2", "p3"]);
    expect(log).toEqual([
      "approve:p2",
      "start:p2",
      "end:p2",
      "commit:tool",
      "approve:p3",
      "start:p3",
      "end:p3",
      "commit:tool",
      "commit:assistant",
    ]);
    expect(h.committed.map((m) => (m.role === "tool" ? m.toolCallId : m.role))).toEqual(["p2", "p3", "assistant"]);
    const sent = h.model.requests[0]?.messages ?? [];
    expect(sent.map((m) => (m.role === "tool" ? m.toolCallId : m.role))).toEqual([
      "user",
      "assistant",
      "p1",
      "p2",
      "p3",
    ]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 4: resuming a history without pending calls just asks the model, adding no user message", async () => {
    const history = [userMessage("go")];
    const h = new Harness({ history, resume: true, steps: [{ text: "answer" }] });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    expect(h.committed.map((m) => m.role)).toEqual(["assistant"]);
    expect(h.model.requests[0]?.messages.map((m) => m.content)).toEqual(["go"]);
    h.model.assertComplete();
  });

  it("law 4: pending calls on resume are resolved like any other: unknown tools and invalid arguments get their results", async () => {
    const echo = testTool({ name: "echo" });
    const history = [
      userMessage("go"),
      assistantMessage("", [toolCall("p1", "missing", {}), toolCall("p2", "echo", "{bad")]),
    ];
    const h = new Harness({ history, resume: true, tools: [echo], steps: [{ text: "ok" }] });
    const result = await h.run();
    expect(h.resultOf("p1").metadata.errorCode).toBe("UNKNOWN_TOOL");
    expect(h.resultOf("p2").metadata.errorCode).toBe("INVALID_ARGUMENTS");
    expect(echo.executions).toHaveLength(0);
    expectConsistent(h, result);
  });
});
