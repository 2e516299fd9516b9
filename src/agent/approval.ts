import type { ToolCall } from "./messages.js";
import type { AnyAgentTool } from "./tool.js";

export interface ToolCallDecision {
  decision: "approve" | "deny";
  reason?: string | null;
}

export interface BeforeToolCallRequest {
  toolCall: ToolCall;
  tool: AnyAgentTool;
  /** The validated input. */
  input: unknown;
  /** The run's signal, also fired when the run's wall-time budget runs out (see withDeadline). */
  signal: AbortSignal;
}

/**
 * Asked before every valid tool call, after argument validation and before any
 * side effect. It may wait (for a person); it throws only when something broke.
 * Once `signal` fires (the run is cancelled, or its wall-time budget is spent) the loop no
 * longer waits for it and closes the call itself: from then on the hook must record nothing
 * of the call, nor take a decision for it.
 */
export type BeforeToolCall = (request: BeforeToolCallRequest) => Promise<ToolCallDecision>;

export const approveAll: BeforeToolCall = async () => ({ decision: "approve" });
