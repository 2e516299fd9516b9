import { describe, expect, it } from "vitest";
import { messageChars, selectContext } from "../../src/agent/context-window.js";
import type { AgentMessage } from "../../src/agent/messages.js";
import { toolOk } from "../../src/agent/tool.js";
import { toolCall } from "../fakes/scripted-model.js";
import {
  assistantMessage,
  expectConsistent,
  expectEveryCallAnsweredOnce,
  Harness,
  testTool,
  toolMessage,
  userMessage,
} from "./harness.js";

const chars = (messages: readonly AgentMessage[]) => messages.reduce((sum, m) => sum + messageChars(m), 0);

/**
 * Units, oldest first: [u1] 10, [a1 + t1] 20 + 30 = 50, [u2] 5; the run adds its input.
 * a1's content is empty: its cost is its tool-call arguments.
 */
function priorHistory(): AgentMessage[] {
  return [
    userMessage("u".repeat(10)),
    assistantMessage("", [toolCall("k1", "echo", '{"text":"012345678"}')]), // 20 chars of arguments
    toolMessage("k1", "t".repeat(30)),
    userMessage("v".repeat(5)),
  ];
}

describe("context window (law 10)", () => {
  it("law 10: the history's cost is message contents plus tool-call arguments", () => {
    const history = priorHistory();
    expect(history.map((m) => messageChars(m))).toEqual([10, 20, 30, 5]);
  });

  it("law 10: what the provider profile sends back with a message (extra) counts with its content", () => {
    const history = priorHistory();
    // a1 sends 40 characters of reasoning blocks back: [a1 + t1] now costs 90.
    const extra = (m: AgentMessage) => (m === history[1] ? 40 : 0);
    expect(history.map((m) => messageChars(m, extra))).toEqual([10, 60, 30, 5]);
    expect(selectContext(history, 105, extra)).toMatchObject({ ok: true, trimmedCount: 0, chars: 105 });
    // 104 held everything without the blocks (65); with them only [a1 + t1, u2] (95) fits.
    expect(selectContext(history, 104, extra)).toMatchObject({ ok: true, trimmedCount: 1, chars: 95 });
    expect(selectContext(history, 104)).toMatchObject({ ok: true, trimmedCount: 0, chars: 65 });
    expect(selectContext(history, 94, extra)).toMatchObject({ ok: true, trimmedCount: 3, chars: 5 });
    const tooSmall = selectContext([history[0]!, history[1]!, history[2]!], 89, extra);
    expect(tooSmall).toMatchObject({ ok: false, message: expect.stringContaining("needs 90 characters") });
  });

  it("law 10: without trimming pressure, everything is sent", async () => {
    const history = priorHistory();
    const h = new Harness({ history, input: "q", contextMaxChars: 66, steps: [{ text: "ok" }] });
    await h.run();
    // 10 + 50 + 5 + 1 = 66 fits exactly.
    expect(h.model.requests[0]?.messages).toHaveLength(5);
    h.model.assertComplete();
  });

  it("law 10: trimming sends the newest whole units and never splits an assistant message from its tool results", async () => {
    const history = priorHistory();
    const before = structuredClone(history);
    // 55 would fit [t1, u2, q] (36) if messages were trimmed one by one; a whole unit
    // [a1, t1] needs 50 more than [u2, q] (6), so only [u2, q] is sent.
    const h = new Harness({ history, input: "q", contextMaxChars: 55, steps: [{ text: "ok" }] });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    const sent = h.model.requests[0]?.messages ?? [];
    expect(sent.map((m) => m.content)).toEqual(["vvvvv", "q"]);
    expect(sent.some((m) => m.role === "tool")).toBe(false);
    // The stored history is whole: the prior history is untouched and the run committed all it made.
    expect(history).toEqual(before);
    expect(h.committed.map((m) => [m.role, m.content])).toEqual([
      ["user", "q"],
      ["assistant", "ok"],
    ]);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 10: a budget that holds the assistant unit sends it whole, starting at the assistant message", async () => {
    const history = priorHistory();
    const h = new Harness({ history, input: "q", contextMaxChars: 56, steps: [{ text: "ok" }] });
    await h.run();
    const sent = h.model.requests[0]?.messages ?? [];
    expect(sent.map((m) => m.role)).toEqual(["assistant", "tool", "user", "user"]);
    expect(chars(sent)).toBe(56);
    expectEveryCallAnsweredOnce(sent);
    h.model.assertComplete();
  });

  it("law 10: every request of a run is trimmed to the budget at unit boundaries, while everything is committed", async () => {
    const big = testTool({ name: "echo", execute: async () => toolOk("r".repeat(40)) });
    const h = new Harness({
      tools: [big],
      input: "i".repeat(30),
      contextMaxChars: 70,
      steps: [
        { toolCalls: [toolCall("c1", "echo", { text: "a" })] }, // args 12 chars
        { toolCalls: [toolCall("c2", "echo", { text: "b" })] },
        { text: "done" },
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    for (const request of h.model.requests) {
      expect(chars(request.messages)).toBeLessThanOrEqual(70);
      expectEveryCallAnsweredOnce(request.messages);
      expect(request.messages[0]?.role).not.toBe("tool");
    }
    // Request 2: [user 30][a1 12 + t1 40] = 82 > 70 -> the user message is dropped.
    expect(h.model.requests[1]?.messages.map((m) => m.role)).toEqual(["assistant", "tool"]);
    // Request 3: only the newest unit fits.
    expect(h.model.requests[2]?.messages.map((m) => (m.role === "tool" ? m.toolCallId : m.role))).toEqual([
      "assistant",
      "c2",
    ]);
    expect(h.committed).toHaveLength(6);
    expectConsistent(h, result);
    h.model.assertComplete();
  });

  it("law 10: the system prompt does not count against contextMaxChars", async () => {
    const history = priorHistory();
    const h = new Harness({
      history,
      input: "q",
      system: "S".repeat(10_000),
      contextMaxChars: 66,
      steps: [{ text: "ok" }],
    });
    await h.run();
    expect(h.model.requests[0]?.system).toHaveLength(10_000);
    expect(h.model.requests[0]?.messages).toHaveLength(5);
    h.model.assertComplete();
  });

  it("law 10: a budget too small for the newest unit is an error (CONTEXT_TOO_SMALL), not an empty send, and no model request is made", async () => {
    const h = new Harness({ input: "a question of 27 characters", contextMaxChars: 10, steps: [] });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("CONTEXT_TOO_SMALL");
    expect(result.error?.message).toContain("10");
    expect(result.error?.message).toContain("27");
    expect(h.model.requests).toHaveLength(0);
    expect(h.eventsOf("turn.started")).toEqual([]);
    expect(result.stats.modelCalls).toBe(0);
    expect(h.committed.map((m) => m.role)).toEqual(["user"]);
    h.model.assertComplete();
  });

  it("law 10: a tool result that outgrows the budget mid-run is CONTEXT_TOO_SMALL, after the result was committed", async () => {
    const big = testTool({ name: "echo", execute: async () => toolOk("r".repeat(100)) });
    const h = new Harness({
      tools: [big],
      input: "q",
      contextMaxChars: 50,
      steps: [{ toolCalls: [toolCall("c1", "echo", { text: "a" })] }],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("error");
    expect(result.error?.code).toBe("CONTEXT_TOO_SMALL");
    expect(h.model.requests).toHaveLength(1);
    expect(h.resultOf("c1").content).toHaveLength(100);
    expectConsistent(h, result);
    h.model.assertComplete();
  });
});
