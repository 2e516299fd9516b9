import type { z } from "zod";
import { WallTimeSpent } from "./budget.js";

/**
 * What a tool returns. Failure is a value: the model sees it and may repair.
 * `truncated` says the output was cut to a cap (and the output says so in words). `files`, on
 * success, names the workspace files (relative to the workspace root, as they are, not as
 * shown) whose content the output shows: kept in the result's metadata, it is what step traces
 * list as sent (includedFiles), so that no one parses the output for names.
 */
export type ToolOutcome =
  | { ok: true; output: string; truncated?: boolean; files?: string[] }
  | { ok: false; errorCode: string; message: string; retryable: boolean; truncated?: boolean };

export interface ToolExecutionContext {
  toolCallId: string;
  /**
   * Fires when the run is cancelled or its wall-time budget is spent; a tool stops its work and
   * reports what happened, in words from stopCause. A throw counts as the stop only when it is
   * the signal's reason or an AbortError (see stoppedBy); any other throw is the tool's failure.
   */
  signal: AbortSignal;
}

/**
 * A tool as the loop sees it: its input is validated against `inputSchema` before
 * `execute` is called. `execute` may throw only for broken invariants.
 */
export interface AgentTool<Input = unknown> {
  name: string;
  description: string;
  inputSchema: z.ZodType<Input>;
  /** Read-only tools are allowed without asking by default. */
  readOnly: boolean;
  /** Touches only the run's own state (the plan tools): executed without asking `beforeToolCall`. */
  alwaysAllowed?: boolean;
  execute(input: Input, context: ToolExecutionContext): Promise<ToolOutcome>;
}

// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous tool list needs an erased input type
export type AnyAgentTool = AgentTool<any>;

export const toolOk = (output: string, truncated = false): ToolOutcome => ({ ok: true, output, truncated });

export const toolError = (errorCode: string, message: string, retryable = false): ToolOutcome => ({
  ok: false,
  errorCode,
  message,
  retryable,
});

/**
 * Why a tool's fired signal stopped it, in words for its result (what the model reads): "the
 * run was cancelled", or that the run's time budget ran out when the signal's reason is the
 * deadline's (WallTimeSpent), or a StopWithoutGrace's own message. Every tool words its stopped result with this.
 */
export function stopCause(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof WallTimeSpent || reason instanceof StopWithoutGrace
    ? reason.message
    : "the run was cancelled";
}

/**
 * A signal's reason that leaves tools no grace: what a tool runs is killed at once (a shell
 * command gets SIGKILL, no SIGTERM first), e.g. because someone else may take over its work
 * within moments. Its message says why, and stopCause words the tool's result with it.
 */
export class StopWithoutGrace extends Error {
  override readonly name = "StopWithoutGrace";
}

/** Whether `signal` fired with a reason that leaves no grace (StopWithoutGrace). */
export const stopsWithoutGrace = (signal: AbortSignal): boolean =>
  signal.aborted && signal.reason instanceof StopWithoutGrace;
