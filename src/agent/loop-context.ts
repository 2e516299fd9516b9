import { messageOf } from "../message-of.js";
import type { BeforeToolCall } from "./approval.js";
import type { BudgetFinding, RunBudgets } from "./budget.js";
import type { Checkpoint, LoopCommit, LoopNotice } from "./events.js";
import type { AgentMessage } from "./messages.js";
import type { ModelClient } from "./model.js";
import type { RunError } from "./run-error.js";
import type { RunStats } from "./stats.js";
import type { StepTrace } from "./step-trace.js";
import type { AnyAgentTool } from "./tool.js";

/** The injected I/O of one run of the loop, shared by its phases. */
export interface LoopContext {
  model: ModelClient;
  modelName?: string;
  providerProfile?: string | undefined;
  system?: string;
  tools: ReadonlyMap<string, AnyAgentTool>;
  beforeToolCall: BeforeToolCall;
  /**
   * Persists a message or a tool's start, with the run's stats as they are once it is
   * committed (its duration up to now included); awaited; a throw ends the run with `error`
   * (PERSISTENCE_FAILED), whose message carries the thrown error's: the run's clients read it,
   * so a host throws its own words (a HostFailure, to say what to do as well).
   */
  commit: (item: LoopCommit, stats: RunStats) => Promise<void>;
  /** Tells watchers something happened; never throws (the host's failures are swallowed). */
  notify: (notice: LoopNotice) => void;
  /** Awaited at the checkpoints; the host may fire the signal there to stop the run. */
  checkpoint: (at: Checkpoint) => Promise<void>;
  /** A turn's trace, as it grows (see RunAgentParams.onStep); never throws. */
  onStep: (step: StepTrace) => void;
  signal: AbortSignal;
  contextMaxChars?: number;
  /** See RunAgentParams.maxToolCallsPerTurn. */
  maxToolCallsPerTurn?: number;
  newId: () => string;
  /** The whole history, growing as messages are committed. */
  history: AgentMessage[];
  /** Tool-call ids the conversation has already used: an id names one call, for results and approvals. */
  usedToolCallIds: Set<string>;
  stats: RunStats;
  budgets: RunBudgets;
  /** The run's wall time so far, counting earlier processes' share when resumed. */
  elapsedMs: () => number;
}

/**
 * How a phase ended when the run must stop; `toolCall`: the call it stopped at, if any;
 * `hint`: what to do, when the host (see HostFailure) or the model client said, else the error code's.
 */
export type PhaseStop = (
  | { stopReason: "aborted" }
  | { stopReason: "error"; error: RunError; hint?: string }
  | { stopReason: "budget_exhausted"; budget: BudgetFinding }
) & { toolCall?: { id: string; tool: string } };

/**
 * What a host's I/O for the loop (a commit, the pending-input hook) throws to say, in words
 * the run's clients may read, what failed (`message`) and what to do about it (`hint`, which
 * ends the run's stop detail); the failure itself is its `cause`, for the host's log.
 */
export class HostFailure extends Error {
  constructor(
    message: string,
    readonly hint: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "HostFailure";
  }
}

/** The hint a host gave with what it threw (see HostFailure), if any. */
export const hintOf = (err: unknown): { hint?: string } => (err instanceof HostFailure ? { hint: err.hint } : {});

export class PersistenceError extends Error {
  readonly code = "PERSISTENCE_FAILED";
  constructor(readonly causeError: unknown) {
    super(`could not save the run's progress: ${messageOf(causeError)}`);
    this.name = "PersistenceError";
  }
}

/**
 * Commits one item; a failed commit becomes a PhaseStop. What the item adds to the stats
 * (a turn for an assistant message, a tool call for a tool's start) is counted with it, and
 * the stats carry the run's wall time up to now.
 */
export async function commitItem(ctx: LoopContext, item: LoopCommit): Promise<PhaseStop | null> {
  const counts = item.type === "tool.started" ? "toolCalls" : item.message.role === "assistant" ? "turns" : null;
  if (counts) ctx.stats[counts]++;
  ctx.stats.durationMs = Math.round(ctx.elapsedMs());
  try {
    await ctx.commit(item, { ...ctx.stats });
  } catch (err) {
    if (counts) ctx.stats[counts]--;
    if (err instanceof InputWithdrawnError) return INPUT_WITHDRAWN;
    const failure = new PersistenceError(err);
    return { stopReason: "error", error: { code: failure.code, message: failure.message }, ...hintOf(err) };
  }
  return null;
}

/**
 * Thrown by `commit` for a user message of steered input no longer pending (withdrawn since the
 * hook read it: see Store.inputs.withdraw): nothing was written, and the input is skipped.
 */
export class InputWithdrawnError extends Error {}

/** commitItem's answer for an InputWithdrawnError: not a stop (see takePendingInput). */
export const INPUT_WITHDRAWN: PhaseStop = {
  stopReason: "error",
  error: { code: "INPUT_WITHDRAWN", message: "the steered input was withdrawn" },
};

/**
 * Commits a message and appends it to the history; a failed commit becomes a PhaseStop.
 * `final`: the model's reply that ends the run; `tool`: a tool result's tool; `ran`: whether
 * that tool ran; `undecided`: the result of a call whose approval was not answered (see LoopCommit).
 */
export async function commitMessage(
  ctx: LoopContext,
  message: AgentMessage,
  {
    final = false,
    tool,
    ran,
    undecided = false,
  }: { final?: boolean; tool?: string; ran?: boolean; undecided?: boolean } = {},
): Promise<PhaseStop | null> {
  const stop = await commitItem(ctx, {
    type: "message",
    message,
    ...(final ? { final } : {}),
    ...(tool === undefined ? {} : { tool }),
    ...(ran === undefined ? {} : { ran }),
    ...(undecided ? { undecided } : {}),
  });
  if (!stop) ctx.history.push(message);
  return stop;
}

/** Runs a host callback that may only notify: whatever it throws is dropped, never the loop's failure. */
export function notifyOnly<A extends unknown[]>(fn: ((...args: A) => void) | undefined): (...args: A) => void {
  return (...args) => {
    try {
      fn?.(...args);
    } catch {
      // A notice that could not be delivered loses nothing committed.
    }
  };
}
