import { keptFiles } from "./included-files.js";
import type { ToolMessage } from "./messages.js";
import { wellFormed } from "./messages.js";
import type { ToolOutcome } from "./tool.js";

/** Stable codes of the results the host itself writes for a tool call. */
export const ToolResultCode = {
  unknownTool: "UNKNOWN_TOOL",
  invalidArguments: "INVALID_ARGUMENTS",
  denied: "DENIED",
  aborted: "ABORTED",
  notExecuted: "NOT_EXECUTED",
  executionFailed: "TOOL_EXECUTION_FAILED",
  interrupted: "INTERRUPTED",
  resultLost: "RESULT_LOST",
  budgetExhausted: "BUDGET_EXHAUSTED",
} as const;

export interface ToolResultInput {
  id: string;
  toolCallId: string;
  outcome: ToolOutcome;
  durationMs?: number;
}

/**
 * The one result message of a tool call, built from what happened to it. The files a
 * successful outcome names are kept in its metadata (as many as a step trace lists: keptFiles).
 */
export function toolResultMessage({ id, toolCallId, outcome, durationMs = 0 }: ToolResultInput): ToolMessage {
  const content = wellFormed(outcome.ok ? outcome.output : outcome.message);
  const files = outcome.ok && outcome.files ? keptFiles(outcome.files.map(wellFormed)) : undefined;
  return {
    id,
    role: "tool",
    toolCallId,
    content,
    isError: !outcome.ok,
    metadata: {
      errorCode: outcome.ok ? null : outcome.errorCode,
      retryable: outcome.ok ? false : outcome.retryable,
      durationMs: Math.max(0, Math.round(durationMs)),
      outputChars: content.length,
      truncated: outcome.truncated ?? false,
      ...(files ? { files } : {}),
    },
  };
}

const failure = (errorCode: string, message: string, retryable: boolean): ToolOutcome => ({
  ok: false,
  errorCode,
  message,
  retryable,
});

export const unknownToolOutcome = (name: string, available: string[]): ToolOutcome =>
  failure(
    ToolResultCode.unknownTool,
    `unknown tool "${name}"; available tools: ${available.length ? available.join(", ") : "(none)"}`,
    true,
  );

export const invalidArgumentsOutcome = (reason: string): ToolOutcome =>
  failure(ToolResultCode.invalidArguments, `invalid arguments: ${reason}`, true);

export const deniedOutcome = (reason: string | null): ToolOutcome =>
  failure(ToolResultCode.denied, `tool call denied${reason ? `: ${reason}` : ""}`, false);

export const abortedOutcome = (): ToolOutcome =>
  failure(ToolResultCode.aborted, "aborted before execution: the run was cancelled", false);

/** `why`: which budget is spent, in words ("this run used 1,200 of its 1,000 tokens"). */
export const budgetExhaustedOutcome = (why: string): ToolOutcome =>
  failure(ToolResultCode.budgetExhausted, `not executed: budget exhausted (${why})`, false);

export const notExecutedOutcome = (): ToolOutcome =>
  failure(ToolResultCode.notExecuted, "not executed after an earlier failure", true);

/** Deliberately generic: the exception's text may be sensitive and is never stored. */
export const executionFailedOutcome = (): ToolOutcome =>
  failure(ToolResultCode.executionFailed, "tool execution failed", false);

export const interruptedOutcome = (): ToolOutcome =>
  failure(
    ToolResultCode.interrupted,
    "interrupted: the server stopped while this tool was running; its effects are unknown",
    false,
  );

export const resultLostOutcome = (): ToolOutcome =>
  failure(ToolResultCode.resultLost, "the tool ran, but its result could not be saved; its effects are unknown", false);
