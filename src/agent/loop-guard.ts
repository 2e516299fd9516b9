import { callFingerprint, canonicalArguments } from "./fingerprint.js";
import type { AgentMessage, ToolCall, ToolMessage } from "./messages.js";
import { TOO_MANY_TOOL_CALLS } from "./tool-call-cap.js";
import { ToolResultCode } from "./tool-results.js";

/** The repeat limit when neither the run nor the server sets one. */
export const DEFAULT_LOOP_REPEAT_LIMIT = 3;

/** Why the loop guard stopped a run: the last `count` calls of the run were the same call with the same outcome. */
export interface LoopFinding {
  /** `same_error`: the call failed with the same error code each time; `same_result`: it returned the same output. */
  kind: "same_error" | "same_result";
  tool: string;
  fingerprint: string;
  /** The arguments, canonical (sorted keys). */
  arguments: string;
  errorCode: string | null;
  count: number;
}

/** A call of the run with its committed result. */
interface AnsweredCall {
  call: ToolCall;
  result: ToolMessage;
}

/**
 * Results of calls the host did not run for reasons outside the call itself (a cancellation, a
 * spent budget, an earlier failure, the per-reply cap, a restart): the model did not repeat
 * anything, so the guard passes over them. A denial or invalid arguments do count.
 */
const NOT_RUN: ReadonlySet<string> = new Set([
  ToolResultCode.aborted,
  ToolResultCode.notExecuted,
  ToolResultCode.budgetExhausted,
  ToolResultCode.interrupted,
  ToolResultCode.resultLost,
  TOO_MANY_TOOL_CALLS,
]);

/**
 * The last `limit` answered calls of `messages` that the host ran (or refused for their content),
 * newest first; a call without a result ends the search.
 */
function lastAnsweredCalls(messages: readonly AgentMessage[], limit: number, from: number): AnsweredCall[] {
  const found: AnsweredCall[] = [];
  const results = new Map<string, ToolMessage>();
  for (let i = messages.length - 1; i >= from && found.length < limit; i--) {
    const message = messages[i] as AgentMessage;
    if (message.role === "tool") {
      results.set(message.toolCallId, message);
      continue;
    }
    if (message.role !== "assistant") continue;
    const calls = message.toolCalls ?? [];
    for (let j = calls.length - 1; j >= 0 && found.length < limit; j--) {
      const call = calls[j] as ToolCall;
      const result = results.get(call.id);
      if (!result) return found;
      if (!NOT_RUN.has(result.metadata.errorCode ?? "")) found.push({ call, result });
    }
    results.clear();
  }
  return found;
}

/** The same outcome: a failure with the same error code, or a success with the same output. */
const sameOutcome = (a: ToolMessage, b: ToolMessage): boolean =>
  a.isError === b.isError && (a.isError ? a.metadata.errorCode === b.metadata.errorCode : a.content === b.content);

/**
 * The loop guard, without I/O: whether the run's last `limit` tool calls (`history` from
 * index `from`, where the run's own messages begin) were one call (same tool, same canonical
 * arguments) that failed with the same error code each time, or returned the same output each
 * time. A `limit` below 2 turns the guard off. It looks at the last `limit` calls only.
 */
export function detectLoop(history: readonly AgentMessage[], limit: number, from = 0): LoopFinding | null {
  if (limit < 2) return null;
  const calls = lastAnsweredCalls(history, limit, from);
  if (calls.length < limit) return null;
  const [first] = calls as [AnsweredCall];
  const args = canonicalArguments(first.call.input);
  for (const { call, result } of calls) {
    if (call.name !== first.call.name || !sameOutcome(result, first.result)) return null;
    if (call.input !== first.call.input && canonicalArguments(call.input) !== args) return null;
  }
  return {
    kind: first.result.isError ? "same_error" : "same_result",
    tool: first.call.name,
    fingerprint: callFingerprint(first.call),
    arguments: args,
    errorCode: first.result.isError ? first.result.metadata.errorCode : null,
    count: limit,
  };
}
