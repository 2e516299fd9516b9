import type { AgentMessage, ToolCall } from "./messages.js";
import type { ToolOutcome } from "./tool.js";

/** Tool calls of one model reply that are executed when the host sets no other cap. */
export const DEFAULT_MAX_TOOL_CALLS_PER_TURN = 64;

/** The result code of a call past the cap. */
export const TOO_MANY_TOOL_CALLS = "TOO_MANY_TOOL_CALLS";

/**
 * Where `calls` sit in the reply that made them: the position of the first one among the
 * last assistant message's calls (0 for a whole reply; more for the calls a resumed run
 * still has to answer, which are that reply's tail), and how many calls the reply made.
 */
export function placeInReply(
  history: readonly AgentMessage[],
  calls: readonly ToolCall[],
): { offset: number; count: number } {
  for (let i = history.length - 1; i >= 0; i--) {
    const message = history[i];
    if (message?.role !== "assistant") continue;
    const all = message.toolCalls ?? [];
    const offset = all.findIndex((c) => c.id === calls[0]?.id);
    return offset >= 0 ? { offset, count: all.length } : { offset: 0, count: calls.length };
  }
  return { offset: 0, count: calls.length };
}

/**
 * Whether the call at `position` (0-based, in the model's order) of a reply of `count` calls
 * is past the cap: null when it may go on (approval, execution), else the result it gets
 * instead, never executed (law 4: it still gets exactly one result).
 */
export function overToolCallCap({
  position,
  count,
  max = DEFAULT_MAX_TOOL_CALLS_PER_TURN,
}: {
  position: number;
  count: number;
  max?: number;
}): ToolOutcome | null {
  if (position < max) return null;
  return {
    ok: false,
    errorCode: TOO_MANY_TOOL_CALLS,
    message: `not executed: this reply made ${count} tool calls and at most ${max} are executed per turn; make fewer calls at a time`,
    retryable: true,
  };
}
