import type { AgentMessage } from "./messages.js";
import {
  applyPlanCall,
  CreatePlanInput,
  isPlanTool,
  type Plan,
  PlanToolName,
  parseCallArguments,
  renderPlan,
  UpdatePlanStepInput,
} from "./plan.js";
import { type AnyAgentTool, type ToolOutcome, toolError, toolOk } from "./tool.js";

/** A run's plan as the loop holds it: the plan its committed messages give. */
export interface PlanState {
  plan: Plan | null;
}

function outcomeOf(state: PlanState, tool: string, input: unknown): ToolOutcome {
  const change = applyPlanCall(state.plan, tool, input);
  return change.ok ? toolOk(renderPlan(change.plan)) : toolError(change.errorCode, change.message, true);
}

/**
 * The plan tools, offered when a run has planning on. They change nothing but the run's plan
 * (so they need no approval); the plan itself changes when a result is committed (`planAfterCommit`).
 */
export function planTools(state: PlanState): AnyAgentTool[] {
  return [
    {
      name: PlanToolName.create,
      description:
        "Write down a plan for the task: its steps in order, each pending, in_progress or completed. It replaces " +
        "any earlier plan. The client sees the plan; keep it current with update_plan_step as the work goes on.",
      inputSchema: CreatePlanInput,
      readOnly: true,
      alwaysAllowed: true,
      execute: async (input) => outcomeOf(state, PlanToolName.create, input),
    },
    {
      name: PlanToolName.updateStep,
      description: "Set the status (and optionally the title) of one step of the plan, by its 1-based number.",
      inputSchema: UpdatePlanStepInput,
      readOnly: true,
      alwaysAllowed: true,
      execute: async (input) => outcomeOf(state, PlanToolName.updateStep, input),
    },
  ];
}

/**
 * The plan once `committed` is in the history (`history`: before it): a successful result of a
 * plan call changes it; null when nothing changed.
 */
export function planAfterCommit(
  state: PlanState,
  history: readonly AgentMessage[],
  committed: AgentMessage,
): Plan | null {
  if (committed.role !== "tool" || committed.isError) return null;
  for (let i = history.length - 1; i >= 0; i--) {
    const message = history[i] as AgentMessage;
    if (message.role !== "assistant") continue;
    const call = message.toolCalls?.find((c) => c.id === committed.toolCallId);
    if (!call || !isPlanTool(call.name)) return null;
    const change = applyPlanCall(state.plan, call.name, parseCallArguments(call.input));
    return change.ok ? change.plan : null;
  }
  return null;
}
