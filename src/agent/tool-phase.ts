import { messageOf } from "../message-of.js";
import type { ToolCallDecision } from "./approval.js";
import { type BudgetFinding, durationSpent, spentBudget, withDeadline } from "./budget.js";
import { callFingerprint } from "./fingerprint.js";
import { commitItem, commitMessage, hintOf, type LoopContext, type PhaseStop } from "./loop-context.js";
import type { ToolCall, ToolMessage } from "./messages.js";
import { resolveToolCall } from "./resolve-tool-call.js";
import type { StepTrace, ToolTrace } from "./step-trace.js";
import { budgetUsage } from "./stop-detail.js";
import { stoppedBy } from "./stopped-by.js";
import type { ToolOutcome } from "./tool.js";
import { overToolCallCap, placeInReply } from "./tool-call-cap.js";
import {
  abortedOutcome,
  budgetExhaustedOutcome,
  deniedOutcome,
  executionFailedOutcome,
  notExecutedOutcome,
  toolResultMessage,
} from "./tool-results.js";
import { type TurnStep, turnStep } from "./turn-step.js";

const ABORTED = Symbol("aborted");

/** Resolves with the promise, or with ABORTED as soon as the signal fires. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/**
 * Executes a turn's tool calls sequentially, in the model's order, committing
 * exactly one result per call (law 4). Returns a PhaseStop when the run must end.
 *
 * `step` is the turn's trace (its tools: those already answered): each call's line is added
 * as its result is committed, and the trace is reported (ctx.onStep) just before the result,
 * so that whenever the loop waits (for a person, a tool, the next model request) the reported
 * step lists every committed result of the turn. Results committed in a row with nothing
 * waited for between them (the closing ones, those past the tool-call cap) leave the report to
 * the turn's last call: a reply of thousands of calls does not store its growing trace with
 * each. The phase's last report is the turn's whole trace; nothing is reported twice.
 */
export async function runToolCalls(
  ctx: LoopContext,
  calls: readonly ToolCall[],
  step: StepTrace | null,
): Promise<PhaseStop | null> {
  const trace = turnStep(ctx, step);
  const stop = await executeCalls(ctx, calls, trace);
  // A commit that failed before the turn's last call leaves lines unreported.
  trace.settle();
  return stop;
}

async function executeCalls(ctx: LoopContext, calls: readonly ToolCall[], trace: TurnStep): Promise<PhaseStop | null> {
  /** The call whose approval was not answered: the run was cancelled, or ran out of wall time, first. */
  let unanswered: string | null = null;
  const lastCall = calls.at(-1);
  /**
   * `durationMs`: how long the call's tool ran (absent: it did not run, whether or not its start
   * was committed); `inRow`: one of results committed in a row (see runToolCalls), only the
   * turn's last reports the step.
   */
  const record = async (
    call: ToolCall,
    outcome: ToolOutcome,
    { durationMs, inRow = false }: { durationMs?: number; inRow?: boolean } = {},
  ): Promise<PhaseStop | null> => {
    const message = toolResultMessage({ id: ctx.newId(), toolCallId: call.id, outcome, durationMs });
    trace.add(traceOf(call, message), !inRow || call === lastCall);
    const ran = durationMs !== undefined;
    return commitMessage(ctx, message, { tool: call.name, ran, undecided: call.id === unanswered });
  };
  /** Gives every call from `index` on the same kind of closing result. */
  const closeFrom = async (index: number, outcome: () => ToolOutcome): Promise<PhaseStop | null> => {
    for (const call of calls.slice(index)) {
      const stop = await record(call, outcome(), { inRow: true });
      if (stop) return stop;
    }
    return null;
  };
  /** Where in the turn the run stopped: at the call with this index. */
  const at = (index: number) => {
    const call = calls[Math.min(index, calls.length - 1)] as ToolCall;
    return { id: call.id, tool: call.name };
  };
  /** Cancelled: the calls from `index` on are closed as aborted; the stop names the call at `stoppedAt`. */
  const abortFrom = async (index: number, stoppedAt = index): Promise<PhaseStop> =>
    (await closeFrom(index, abortedOutcome)) ?? { stopReason: "aborted", toolCall: at(stoppedAt) };
  /**
   * Before a call starts: a spent budget (or `spent`) closes it and the rest as not executed;
   * the stop names the call at `stoppedAt` (one the budget stopped as it ran, else this one).
   */
  const budgetStop = async (index: number, spent?: BudgetFinding, stoppedAt = index): Promise<PhaseStop | null> => {
    const budget = spentBudget(ctx.budgets, ctx.stats, ctx.elapsedMs(), "tool") ?? spent;
    if (!budget) return null;
    return (
      (await closeFrom(index, () => budgetExhaustedOutcome(budgetUsage(budget)))) ?? {
        stopReason: "budget_exhausted",
        budget,
        toolCall: at(stoppedAt),
      }
    );
  };

  const reply = placeInReply(ctx.history, calls);
  for (const [index, call] of calls.entries()) {
    if (ctx.signal.aborted) return abortFrom(index);
    const overBudget = await budgetStop(index);
    if (overBudget) return overBudget;

    const overCap = overToolCallCap({
      position: reply.offset + index,
      count: reply.count,
      max: ctx.maxToolCallsPerTurn,
    });
    if (overCap) {
      // Every later call is past the cap too: they are closed in a row.
      const stop = await record(call, overCap, { inRow: true });
      if (stop) return stop;
      continue;
    }

    const resolved = resolveToolCall(call, ctx.tools);
    if (!resolved.ok) {
      const stop = await record(call, resolved.outcome);
      if (stop) return stop;
      continue;
    }

    await ctx.checkpoint("approval");
    if (ctx.signal.aborted) return abortFrom(index);
    // The wall-time budget counts the wait for approval too, and ends a wait that outlasts it.
    const waiting = withDeadline(ctx.signal, ctx.budgets, ctx.elapsedMs());
    let decision: ToolCallDecision | typeof ABORTED;
    try {
      // A tool that touches only the run's own state (the plan) needs nobody's approval.
      decision = resolved.tool.alwaysAllowed
        ? { decision: "approve" }
        : await raceAbort(
            ctx.beforeToolCall({ toolCall: call, tool: resolved.tool, input: resolved.input, signal: waiting.signal }),
            waiting.signal,
          );
    } catch (err) {
      // A hook torn down by the cancellation is not a failure: the calls are closed as aborted.
      if (ctx.signal.aborted) {
        unanswered = call.id;
        return abortFrom(index);
      }
      return failAt(index, `approval failed for tool call ${call.id}: ${messageOf(err)}`, hintOf(err));
    } finally {
      // Answered, failed or given up on (its signal fired): the wait is over.
      waiting.dispose();
    }
    if (decision === ABORTED) unanswered = call.id;
    // Checkpoint (c): cancelled while approval was pending or as it resolved.
    if (ctx.signal.aborted) return abortFrom(index);
    // The budget ran out first: the call is closed undecided, and the run stops.
    if (decision === ABORTED) return budgetStop(index, durationSpent(ctx.budgets, ctx.elapsedMs()));
    if (decision.decision === "deny") {
      const stop = await record(call, deniedOutcome(decision.reason ?? null));
      if (stop) return stop;
      continue;
    }

    await ctx.checkpoint("tool");
    if (ctx.signal.aborted) return abortFrom(index);
    // A decision that came as the budget ran out: the tool does not start.
    const spentWhileWaiting = await budgetStop(index);
    if (spentWhileWaiting) return spentWhileWaiting;
    // Durable before the tool runs: the start could not be recorded, the tool does not run.
    const notStarted = await commitItem(ctx, { type: "tool.started", toolCallId: call.id, tool: call.name });
    if (notStarted) return notStarted;
    // Cancelled while its start was being written: the tool has not run, and does not (nor is
    // it counted as a tool the run executed).
    if (ctx.signal.aborted) {
      ctx.stats.toolCalls--;
      return abortFrom(index);
    }
    const started = performance.now();
    // The wall-time budget stops a tool that outlasts it, as a cancellation would.
    const deadline = withDeadline(ctx.signal, ctx.budgets, ctx.elapsedMs());
    const { signal } = deadline;
    let outcome: ToolOutcome;
    try {
      outcome = await resolved.tool.execute(resolved.input, { toolCallId: call.id, signal });
    } catch (err) {
      // Stopped by the wall-time budget; an error of the tool's own is its failure (law 8).
      if (!ctx.signal.aborted && stoppedBy(err, signal)) {
        return (
          (await record(call, executionFailedOutcome(), { durationMs: performance.now() - started })) ??
          (await budgetStop(index + 1, durationSpent(ctx.budgets, ctx.elapsedMs()), index))
        );
      }
      if (ctx.signal.aborted) {
        // It started, so its outcome is recorded (generically); the run still ends aborted.
        return (
          (await record(call, executionFailedOutcome(), { durationMs: performance.now() - started })) ??
          abortFrom(index + 1, index)
        );
      }
      return failAt(index, `tool ${call.name} failed: ${messageOf(err)}`, {}, performance.now() - started);
    } finally {
      // The tool is over: its deadline goes (`signal` keeps whether it fired while the tool ran).
      deadline.dispose();
    }
    const stop = await record(call, outcome, { durationMs: performance.now() - started });
    if (stop) return stop;
    await ctx.checkpoint("tool-result");
    // Checkpoint (d): the tool's real result is kept; the rest are closed.
    if (ctx.signal.aborted) return abortFrom(index + 1, index);
    // The wall-time budget stopped the tool, which still returned a result: likewise.
    if (signal.aborted) return budgetStop(index + 1, durationSpent(ctx.budgets, ctx.elapsedMs()), index);
  }
  return null;

  /**
   * Law 8: the current call gets a generic failure (with `durationMs`, how long its tool ran;
   * absent: it did not run), later ones "not executed".
   */
  async function failAt(
    index: number,
    message: string,
    told: { hint?: string } = {},
    durationMs?: number,
  ): Promise<PhaseStop> {
    const call = calls[index] as ToolCall;
    const stop =
      (await record(call, executionFailedOutcome(), { durationMs })) ??
      (await closeFrom(index + 1, notExecutedOutcome));
    return (
      stop ?? { stopReason: "error", error: { code: "TOOL_EXECUTION_FAILED", message }, toolCall: at(index), ...told }
    );
  }
}

/** A tool call's line in its step trace, from its result. */
export function traceOf(call: ToolCall, message: ToolMessage): ToolTrace {
  return {
    toolCallId: call.id,
    tool: call.name,
    fingerprint: callFingerprint(call),
    status: message.isError ? "error" : "ok",
    errorCode: message.metadata.errorCode,
    durationMs: message.metadata.durationMs,
    outputChars: message.metadata.outputChars,
    truncated: message.metadata.truncated,
  };
}
