import type { ToolStart } from "../agent/events.js";
import type { Plan } from "../agent/plan.js";
import type { RunView } from "./run.js";
import type { StoredMessage } from "./stored-message.js";

/**
 * Every event a run produces. The same union feeds SSE frames, the `run_events`
 * table and test assertions. `seq` is per run, starting at 1, without gaps.
 */
export type RunEventBody =
  /** The run waits in its session's queue (its `run.started` follows when it starts). */
  | { type: "run.queued" }
  | { type: "run.started" }
  | { type: "turn.started"; turn: number }
  | { type: "text.delta"; text: string }
  /** Reasoning the provider streamed beside the answer; SSE sends it only to clients that ask (`?reasoning=true`). */
  | { type: "reasoning.delta"; text: string }
  | { type: "message"; message: StoredMessage }
  | {
      type: "approval.requested";
      toolCallId: string;
      tool: string;
      input: unknown;
      reason: string;
    }
  | {
      type: "approval.resolved";
      toolCallId: string;
      decision: "approve" | "deny";
      reason: string | null;
    }
  | ToolStart
  /** A plan tool's result changed the run's plan: written with that result. */
  | { type: "plan.updated"; plan: Plan }
  | { type: "run.finished"; run: RunView };

export type RunEventType = RunEventBody["type"];

export type RunEvent = RunEventBody & { runId: string; seq: number; at: string };
