import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AgentMessage, ToolMessage } from "../../src/agent/messages.js";
import {
  applyPlanCall,
  EMPTY_PLAN_FOLD,
  foldPlan,
  isPlanTool,
  type Plan,
  parseCallArguments,
  planOfFold,
} from "../../src/agent/plan.js";

const META = { errorCode: null, retryable: false, durationMs: 0, outputChars: 0, truncated: false };
const reply = (id: string, toolCalls: { id: string; name: string; input: string }[]): AgentMessage => ({
  id,
  role: "assistant",
  content: "",
  toolCalls,
});
const result = (toolCallId: string, isError: boolean): AgentMessage => ({
  id: `msg_${toolCallId}`,
  role: "tool",
  toolCallId,
  content: isError ? "error" : "ok",
  isError,
  metadata: META,
});

/** The plan as the whole run's messages give it, read at once: every plan call with a success result, applied in order. */
function planOfWholeRun(messages: readonly AgentMessage[]): Plan | null {
  const results = new Map<string, ToolMessage>();
  for (const m of messages) if (m.role === "tool") results.set(m.toolCallId, m);
  let plan: Plan | null = null;
  for (const m of messages) {
    if (m.role !== "assistant") continue;
    for (const call of m.toolCalls ?? []) {
      if (!isPlanTool(call.name) || results.get(call.id)?.isError !== false) continue;
      const change = applyPlanCall(plan, call.name, parseCallArguments(call.input));
      if (change.ok) plan = change.plan;
    }
  }
  return plan;
}

/** A run's messages: replies of plan calls (valid or not) and other calls, each call's one result (or none yet) after it. */
const runMessages = fc
  .array(
    fc.array(
      fc.record({
        name: fc.constantFrom("create_plan", "update_plan_step", "read_file"),
        steps: fc.array(fc.constantFrom("a", "b", "c", ""), { minLength: 0, maxLength: 3 }),
        step: fc.integer({ min: 0, max: 4 }),
        status: fc.constantFrom("pending", "in_progress", "completed", "done"),
        result: fc.constantFrom("ok", "error", "none"),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    { maxLength: 8 },
  )
  .map((replies) => {
    const messages: AgentMessage[] = [];
    let n = 0;
    for (const replyCalls of replies) {
      const calls = replyCalls.map((c) => ({
        id: `call_${n++}`,
        name: c.name,
        input:
          c.name === "create_plan"
            ? JSON.stringify({ steps: c.steps.map((title) => ({ title })) })
            : JSON.stringify({ step: c.step, status: c.status }),
      }));
      messages.push(reply(`msg_${n}`, calls));
      calls.forEach((call, i) => {
        const outcome = (replyCalls[i] as { result: string }).result;
        if (outcome !== "none") messages.push(result(call.id, outcome === "error"));
      });
    }
    return messages;
  });

describe("a run's plan folded from its messages as they come", () => {
  it("is the plan of the whole run's messages read at once, however the messages are split into reads", () => {
    fc.assert(
      fc.property(runMessages, fc.array(fc.nat(), { maxLength: 6 }), (messages, cuts) => {
        const bounds = [...new Set(cuts.map((c) => c % (messages.length + 1)))].sort((x, y) => x - y);
        let fold = EMPTY_PLAN_FOLD;
        let from = 0;
        for (const to of [...bounds, messages.length]) {
          fold = foldPlan(fold, messages.slice(from, to));
          from = to;
          expect(planOfFold(fold)).toEqual(planOfWholeRun(messages.slice(0, to)));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("keeps no call once every plan call before it has its result", () => {
    const fold = foldPlan(EMPTY_PLAN_FOLD, [
      reply("msg_1", [{ id: "p1", name: "create_plan", input: JSON.stringify({ steps: [{ title: "one" }] }) }]),
      result("p1", false),
    ]);
    expect(fold).toEqual({ plan: { steps: [{ title: "one", status: "pending" }] }, unsettled: [] });
  });
});
