import { describe, expect, it } from "vitest";
import { planFromMessages } from "../../src/agent/plan.js";
import { toolCall } from "../fakes/scripted-model.js";
import { expectConsistent, Harness, recordingApproval, testTool } from "./harness.js";

const createPlan = (id: string, titles: string[]) =>
  toolCall(id, "create_plan", { steps: titles.map((title) => ({ title })) });
const setStep = (id: string, step: number, status: string) => toolCall(id, "update_plan_step", { step, status });

describe("the plan tools", () => {
  it("are offered only when planning is on", async () => {
    const off = new Harness({ steps: [{ text: "hi" }] });
    await off.run();
    expect(off.model.requests[0]?.tools.map((t) => t.name)).toEqual([]);
    const on = new Harness({ steps: [{ text: "hi" }] });
    await on.run({ planning: true });
    expect(on.model.requests[0]?.tools.map((t) => t.name)).toEqual(["create_plan", "update_plan_step"]);
  });

  it("create and update the plan without approval, commit each change with the result that makes it, and the history gives the same plan", async () => {
    const log: string[] = [];
    const denyAll = recordingApproval(log, () => ({ decision: "deny", reason: "nothing is approved" }));
    const h = new Harness({
      beforeToolCall: denyAll,
      steps: [
        { toolCalls: [createPlan("p1", ["read the spec", "write the code"])] },
        { toolCalls: [setStep("p2", 1, "completed"), setStep("p3", 7, "completed")] },
        { text: "done" },
      ],
    });
    const result = await h.run({ planning: true });
    expect(result.stopReason).toBe("complete");
    expect(denyAll.requests).toHaveLength(0);
    expect(h.resultOf("p1")).toMatchObject({ isError: false });
    expect(h.resultOf("p1").content).toContain("1. [ ] read the spec (pending)");
    expect(h.resultOf("p3")).toMatchObject({ isError: true, metadata: { errorCode: "PLAN_STEP_NOT_FOUND" } });
    const updates = h.plans;
    expect(updates).toEqual([
      {
        steps: [
          { title: "read the spec", status: "pending" },
          { title: "write the code", status: "pending" },
        ],
      },
      {
        steps: [
          { title: "read the spec", status: "completed" },
          { title: "write the code", status: "pending" },
        ],
      },
    ]);
    expect(planFromMessages(h.committed)).toEqual(updates.at(-1));
    expectConsistent(h, result);
  });

  it("a completed plan never cuts off a model that still calls tools", async () => {
    const echo = testTool({ name: "echo", readOnly: true });
    const h = new Harness({
      tools: [echo],
      steps: [
        { toolCalls: [createPlan("p1", ["one step"]), setStep("p2", 1, "completed")] },
        { toolCalls: [toolCall("e1", "echo", { text: "one more thing" })] },
        { text: "all done" },
      ],
    });
    const result = await h.run({ planning: true });
    expect(result.stopReason).toBe("complete");
    expect(echo.executions).toHaveLength(1);
    h.model.assertComplete();
  });

  it("a resumed run continues the plan its committed messages give", async () => {
    const first = new Harness({ steps: [{ toolCalls: [createPlan("p1", ["a", "b"])] }] });
    const before = await first.run({ planning: true, maxTurns: 1 });
    expect(before.stopReason).toBe("max_turns");
    const resumed = new Harness({
      resume: true,
      history: first.committed,
      steps: [{ toolCalls: [setStep("p2", 2, "in_progress")] }, { text: "working" }],
    });
    await resumed.run({ planning: true, runStart: 0, priorStats: before.stats, maxTurns: 5 });
    expect(resumed.plans.at(-1)?.steps.map((s) => s.status)).toEqual(["pending", "in_progress"]);
    expect(planFromMessages(resumed.fullHistory)).toEqual(resumed.plans.at(-1));
  });
});
