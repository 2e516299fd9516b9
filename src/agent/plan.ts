import { z } from "zod";
import type { AgentMessage } from "./messages.js";

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

/** Stable codes of a plan tool's error results (besides INVALID_ARGUMENTS). */
export const PlanErrorCode = { noPlan: "NO_PLAN", stepNotFound: "PLAN_STEP_NOT_FOUND" } as const;

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
  if (!plan) {
    return { ok: false, errorCode: PlanErrorCode.noPlan, message: "there is no plan yet: create one with create_plan" };
  }
  const { step, status, title } = parsed.data;
  const current = plan.steps[step - 1];
  if (!current) {
    return {
      ok: false,
      errorCode: PlanErrorCode.stepNotFound,
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

/** A plan call not yet applied: the first without a result, and those after it. */
interface UnsettledCall {
  id: string;
  name: string;
  input: string;
  /** Its result was a success (true), an error (false); undefined while it has none. */
  ok?: boolean;
}

/**
 * A run's plan folded from a prefix of its committed messages: `plan` holds every plan call
 * up to the first one without a result, applied; `unsettled` that call and the plan calls
 * after it. Immutable: foldPlan returns a new one.
 */
export interface PlanFold {
  readonly plan: Plan | null;
  readonly unsettled: readonly UnsettledCall[];
}

export const EMPTY_PLAN_FOLD: PlanFold = { plan: null, unsettled: [] };

/** Applies a plan call whose result was a success; an input the call could not apply changes nothing. */
const applied = (plan: Plan | null, call: UnsettledCall): Plan | null => {
  const change = applyPlanCall(plan, call.name, parseCallArguments(call.input));
  return change.ok ? change.plan : plan;
};

/** `fold` with the run's next messages (in order, after those it was folded from). */
export function foldPlan(fold: PlanFold, messages: readonly AgentMessage[]): PlanFold {
  let unsettled: UnsettledCall[] | null = null;
  for (const m of messages) {
    if (m.role === "assistant") {
      for (const call of m.toolCalls ?? []) {
        if (!isPlanTool(call.name)) continue;
        unsettled ??= [...fold.unsettled];
        unsettled.push({ id: call.id, name: call.name, input: call.input });
      }
    } else if (m.role === "tool") {
      const at = (unsettled ?? fold.unsettled).findIndex((call) => call.id === m.toolCallId);
      if (at < 0) continue;
      unsettled ??= [...fold.unsettled];
      unsettled[at] = { ...(unsettled[at] as UnsettledCall), ok: !m.isError };
    }
  }
  if (unsettled === null) return fold;
  let plan = fold.plan;
  let settled = 0;
  for (const call of unsettled) {
    if (call.ok === undefined) break;
    if (call.ok) plan = applied(plan, call);
    settled++;
  }
  return { plan, unsettled: unsettled.slice(settled) };
}

/**
 * The plan a fold stands for: its applied plan, then every later plan call whose result was a
 * success, in order (a call without a result is skipped, not waited for).
 */
export function planOfFold(fold: PlanFold): Plan | null {
  let plan = fold.plan;
  for (const call of fold.unsettled) if (call.ok) plan = applied(plan, call);
  return plan;
}

/**
 * A run's plan, derived from its committed messages: every plan tool call whose result was a
 * success, applied in order. Null when the run made no plan.
 */
export function planFromMessages(runMessages: readonly AgentMessage[]): Plan | null {
  return planOfFold(foldPlan(EMPTY_PLAN_FOLD, runMessages));
}

const marks: Record<PlanStepStatus, string> = { pending: "[ ]", in_progress: "[~]", completed: "[x]" };

/** The plan as the model reads it in a tool result. */
export function renderPlan(plan: Plan): string {
  const done = plan.steps.filter((s) => s.status === "completed").length;
  const lines = plan.steps.map((s, i) => `${i + 1}. ${marks[s.status]} ${s.title} (${s.status})`);
  return [`plan (${done} of ${plan.steps.length} steps completed):`, ...lines].join("\n");
}
