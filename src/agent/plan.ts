import { z } from "zod";
import type { AgentMessage, ToolMessage } from "./messages.js";

export const PlanStepStatusSchema = z.enum(["pending", "in_progress", "completed"]);
export type PlanStepStatus = z.infer<typeof PlanStepStatusSchema>;

export const PlanSchema = z.object({
  steps: z.array(z.object({ title: z.string(), status: PlanStepStatusSchema })),
});
/** A run's plan: its steps in order, each with a status. */
export type Plan = z.infer<typeof PlanSchema>;

/** The most steps a plan holds. */
export const PLAN_MAX_STEPS = 50;

export const CreatePlanInput = z.strictObject({
  steps: z
    .array(
      z.strictObject({
        title: z.string().trim().min(1).max(500).describe("What the step does, in a few words."),
        status: PlanStepStatusSchema.optional().describe("Defaults to pending."),
      }),
    )
    .min(1)
    .max(PLAN_MAX_STEPS)
    .describe("The steps, in the order they are meant to be done."),
});

export const UpdatePlanStepInput = z.strictObject({
  step: z.number().int().min(1).describe("The step's number, 1-based, as the plan lists it."),
  status: PlanStepStatusSchema,
  title: z.string().trim().min(1).max(500).optional().describe("A new title for the step, if it changed."),
});

export const PlanToolName = { create: "create_plan", updateStep: "update_plan_step" } as const;
const planToolNames: ReadonlySet<string> = new Set(Object.values(PlanToolName));
export const isPlanTool = (name: string): boolean => planToolNames.has(name);

export type PlanChange = { ok: true; plan: Plan } | { ok: false; errorCode: string; message: string };

/**
 * The plan after one plan tool call, without I/O: the tool's execution and the replay of a
 * run's history (`planFromMessages`) both use it, so the plan a restart derives is the plan
 * the run had. `input` is the call's parsed JSON arguments.
 */
export function applyPlanCall(plan: Plan | null, tool: string, input: unknown): PlanChange {
  if (tool === PlanToolName.create) {
    const parsed = CreatePlanInput.safeParse(input);
    if (!parsed.success) return { ok: false, errorCode: "INVALID_ARGUMENTS", message: parsed.error.message };
    return {
      ok: true,
      plan: { steps: parsed.data.steps.map((s) => ({ title: s.title, status: s.status ?? "pending" })) },
    };
  }
  const parsed = UpdatePlanStepInput.safeParse(input);
  if (tool !== PlanToolName.updateStep || !parsed.success) {
    return { ok: false, errorCode: "INVALID_ARGUMENTS", message: `not a plan update: ${tool}` };
  }
  if (!plan) return { ok: false, errorCode: "NO_PLAN", message: "there is no plan yet: create one with create_plan" };
  const { step, status, title } = parsed.data;
  const current = plan.steps[step - 1];
  if (!current) {
    return {
      ok: false,
      errorCode: "PLAN_STEP_NOT_FOUND",
      message: `the plan has ${plan.steps.length} steps; there is no step ${step}`,
    };
  }
  const steps = plan.steps.map((s, i) => (i === step - 1 ? { title: title ?? current.title, status } : s));
  return { ok: true, plan: { steps } };
}

/** A call's JSON arguments, parsed as the host does ("" is `{}`); undefined when they are not JSON. */
export const parseCallArguments = (input: string): unknown => {
  try {
    return input.trim() === "" ? {} : JSON.parse(input);
  } catch {
    return undefined;
  }
};

/**
 * A run's plan, derived from its committed messages: every plan tool call whose result was a
 * success, applied in order. Null when the run made no plan.
 */
export function planFromMessages(runMessages: readonly AgentMessage[]): Plan | null {
  const results = new Map<string, ToolMessage>();
  for (const m of runMessages) if (m.role === "tool") results.set(m.toolCallId, m);
  let plan: Plan | null = null;
  for (const m of runMessages) {
    if (m.role !== "assistant") continue;
    for (const call of m.toolCalls ?? []) {
      if (!isPlanTool(call.name) || results.get(call.id)?.isError !== false) continue;
      const change = applyPlanCall(plan, call.name, parseCallArguments(call.input));
      if (change.ok) plan = change.plan;
    }
  }
  return plan;
}

const marks: Record<PlanStepStatus, string> = { pending: "[ ]", in_progress: "[~]", completed: "[x]" };

/** The plan as the model reads it in a tool result. */
export function renderPlan(plan: Plan): string {
  const done = plan.steps.filter((s) => s.status === "completed").length;
  const lines = plan.steps.map((s, i) => `${i + 1}. ${marks[s.status]} ${s.title} (${s.status})`);
  return [`plan (${done} of ${plan.steps.length} steps completed):`, ...lines].join("\n");
}
