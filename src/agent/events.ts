import type { AgentMessage } from "./messages.js";
import type { Plan } from "./plan.js";

/** The durable start of a tool: committed (awaited) before the tool runs. */
export interface ToolStart {
  type: "tool.started";
  toolCallId: string;
  tool: string;
}

/**
 * What the loop hands to `commit`, awaited: a message, or a tool's start. Once `commit`
 * resolves it is durable; when it throws, the run ends with `error` (PERSISTENCE_FAILED).
 * A message that changes the run's plan (a plan tool's successful result) carries the plan
 * it makes: the host announces it (`plan.updated`) with the message, in the same write.
 * A user message made from the host's pending input (see PendingInputHook) names it: `inputId`.
 * The model's reply without tool calls is `final`: once it is committed the run ends `complete`
 * (nothing is awaited in between), so the host may store the run's end in the same write.
 * A tool result names its call's tool (`tool`) and says whether that tool ran (`ran`): a call
 * whose start was committed has not run when the run was cancelled as the start was written.
 * The result of a call whose approval the loop stopped waiting for (the run was cancelled, or
 * ran out of wall time, before the hook answered) is `undecided`: a decision stored for the
 * call meanwhile is the host's to announce with it.
 */
export type LoopCommit =
  | {
      type: "message";
      message: AgentMessage;
      plan?: Plan;
      inputId?: string;
      final?: boolean;
      tool?: string;
      ran?: boolean;
      undecided?: boolean;
    }
  | ToolStart;

/** What the loop hands to `emit`: notices only, for watchers. Losing one loses nothing committed. */
export type LoopNotice =
  | { type: "turn.started"; turn: number }
  | { type: "text.delta"; text: string }
  /** Reasoning the provider streamed beside the answer; SSE sends it only to clients that ask (`?reasoning=true`). */
  | { type: "reasoning.delta"; text: string };

/**
 * Where the loop asks the host whether it may go on (awaited): before the user message is
 * recorded, before each model request, before an approval is asked, before a tool starts
 * and after a tool returns. The host may stop the run there by firing its AbortSignal,
 * which the loop checks right after.
 */
export type Checkpoint = "input" | "turn" | "approval" | "tool" | "tool-result";
