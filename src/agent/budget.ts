import type { RunStats } from "./stats.js";

/** A run's budgets; an absent one is no limit. */
export interface RunBudgets {
  /** Input plus output tokens of this run's model calls, as the upstream reports them. */
  maxTokens?: number;
  /** Wall time of the run, from its start (a resumed run keeps counting). */
  maxDurationMs?: number;
  /** Tool executions started by this run. */
  maxToolCalls?: number;
}

/** Which budget is spent, with what was used and what was allowed. */
export type BudgetFinding = { budget: "tokens" | "duration" | "tool_calls"; used: number; limit: number };

/**
 * The first spent budget that forbids what comes next, or null. Each budget is checked where
 * it is spent: tokens before a model request, tool calls before a tool starts, wall time before
 * either; so a run never begins work its budgets do not allow (`elapsedMs`: its wall time so far).
 */
export function spentBudget(
  budgets: RunBudgets,
  stats: RunStats,
  elapsedMs: number,
  before: "model_request" | "tool",
): BudgetFinding | null {
  const tokens = stats.inputTokens + stats.outputTokens;
  if (before === "model_request" && budgets.maxTokens !== undefined && tokens >= budgets.maxTokens) {
    return { budget: "tokens", used: tokens, limit: budgets.maxTokens };
  }
  if (budgets.maxDurationMs !== undefined && elapsedMs >= budgets.maxDurationMs) {
    return { budget: "duration", used: Math.round(elapsedMs), limit: budgets.maxDurationMs };
  }
  if (before === "tool" && budgets.maxToolCalls !== undefined && stats.toolCalls >= budgets.maxToolCalls) {
    return { budget: "tool_calls", used: stats.toolCalls, limit: budgets.maxToolCalls };
  }
  return null;
}

/**
 * The reason a deadline signal (withDeadline) aborts with when the run's wall-time budget runs
 * out: nobody cancelled the run. Work stopped by it says so (see stopCause in tool.ts).
 */
export class WallTimeSpent extends Error {
  override readonly name = "WallTimeSpent";
  constructor(readonly maxDurationMs: number) {
    super(`the run's time budget ran out (maxDurationMs: ${maxDurationMs})`);
  }
}

/** A deadline's signal, and its release once the work it bounds is over (see withDeadline). */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Clears the timer and stops listening to the run's signal; `signal` keeps its state. */
  dispose(): void;
}

const unbounded = (signal: AbortSignal): Deadline => ({ signal, dispose: () => {} });

/**
 * The run's signal, also fired (with a WallTimeSpent reason) when the wall-time budget runs out:
 * what a model request, a wait for approval or a tool gets, so the budget stops work in flight
 * as a cancellation would. Fired by the run's signal, it aborts with that signal's reason.
 *
 * Contract: the caller disposes it (in a `finally`) once the request, wait or tool is over.
 * Until then its timer and its listener on the run's signal hold it; after, nothing does (an
 * undisposed deadline would live until the budget's end: up to 24.8 days).
 */
export function withDeadline(signal: AbortSignal, budgets: RunBudgets, elapsedMs: number): Deadline {
  const limit = budgets.maxDurationMs;
  if (limit === undefined || signal.aborted) return unbounded(signal);
  const deadline = new AbortController();
  const dispose = () => {
    clearTimeout(timer);
    signal.removeEventListener("abort", onCancel);
  };
  const fire = (reason: unknown) => {
    dispose();
    deadline.abort(reason);
  };
  const onCancel = () => fire(signal.reason);
  // At most the budget itself (MAX_TIMER_MS), so within what setTimeout takes. Unref'd, as
  // AbortSignal.timeout's is: a deadline does not hold the process open.
  const timer = setTimeout(() => fire(new WallTimeSpent(limit)), Math.max(1, Math.ceil(limit - elapsedMs)));
  timer.unref();
  signal.addEventListener("abort", onCancel, { once: true });
  return { signal: deadline.signal, dispose };
}

/** The finding of a wall-time budget whose deadline fired (the timer may fire a hair early). */
export const durationSpent = (budgets: RunBudgets, elapsedMs: number): BudgetFinding => ({
  budget: "duration",
  used: Math.max(Math.round(elapsedMs), budgets.maxDurationMs ?? 0),
  limit: budgets.maxDurationMs ?? 0,
});
