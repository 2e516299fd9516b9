import { randomUUID } from "node:crypto";
import { answeredTraces, completedStep } from "./answered-traces.js";
import type { BeforeToolCall } from "./approval.js";
import { type RunBudgets, spentBudget } from "./budget.js";
import type { Checkpoint, LoopCommit, LoopNotice } from "./events.js";
import { assertValidHistory, endsInFinalReply, pendingToolCalls } from "./history.js";
import { commitMessage, type LoopContext, notifyOnly, type PhaseStop } from "./loop-context.js";
import { DEFAULT_LOOP_REPEAT_LIMIT, detectLoop, type LoopFinding } from "./loop-guard.js";
import { type AgentMessage, wellFormed } from "./messages.js";
import type { ModelClient } from "./model.js";
import { runModelTurn, toolSpecs } from "./model-turn.js";
import { type PendingInputHook, takePendingInput } from "./pending-input.js";
import { planFromMessages } from "./plan.js";
import { type PlanState, planAfterCommit, planTools } from "./plan-tools.js";
import type { RunError } from "./run-error.js";
import { emptyStats, type RunStats } from "./stats.js";
import type { StepTrace } from "./step-trace.js";
import { describeStop, type StopPoint } from "./stop-detail.js";
import type { StopReason } from "./stop-reason.js";
import type { AnyAgentTool } from "./tool.js";
import { runToolCalls } from "./tool-phase.js";

export interface RunAgentParams {
  model: ModelClient;
  modelName?: string;
  /** The provider profile the session names, passed on to the model client (which detects one without it). */
  providerProfile?: string;
  system?: string;
  tools: readonly AnyAgentTool[];
  /** The committed history before this run (or before this resumption). */
  history: readonly AgentMessage[];
  /**
   * The user message that starts the run; omitted when resuming a run (one whose `history` ends
   * in its final reply then completes without a model request, taking no pending input).
   */
  input?: string;
  beforeToolCall: BeforeToolCall;
  /**
   * Persists a message or a tool's start, awaited: the loop goes on only once it is durable.
   * `stats`: the run's stats once it is committed, its duration up to now included.
   */
  commit: (item: LoopCommit, stats: RunStats) => Promise<void>;
  /** Notices for watchers (turn starts, text deltas); whatever it throws is ignored. */
  emit: (notice: LoopNotice) => void;
  /**
   * Awaited at each checkpoint (see Checkpoint); the host stops the run there by firing
   * `signal`. Absent: the loop goes on.
   */
  checkpoint?: (at: Checkpoint) => Promise<void>;
  /**
   * A turn's trace and the run's stats so far (a copy), each report of a turn replacing the
   * one before. A turn whose reply has tool calls is reported just before its assistant
   * message is committed (the model's part only), then with its tool results: just before a
   * result is committed, listing every call answered so far, that one included (results
   * committed in a row, with nothing waited for between them, are reported with the last of
   * them: see runToolCalls); its last report is its whole trace. A turn whose reply has no tool
   * calls is reported once, just before that reply is committed (see LoopCommit's `final`); a
   * turn that failed, when it ends.
   */
  onStep?: (step: StepTrace, stats: RunStats) => void;
  signal: AbortSignal;
  /** The most model requests this run may make. */
  maxTurns: number;
  /** Tool calls of one model reply that are executed; the rest get a result saying so (default 64). */
  maxToolCallsPerTurn?: number;
  contextMaxChars?: number;
  /** Stats of this run so far, when resuming it; `modelCalls` counts against `maxTurns`. */
  priorStats?: RunStats;
  /** Told once, as the loop starts, its clock: the run's wall time in ms (`priorStats`' included). */
  onClock?: (elapsedMs: () => number) => void;
  /**
   * When resuming: the stored trace of the run's last turn (the turn of the last assistant
   * message). When that message's calls are still pending, its tools are completed (those
   * already answered, then the pending ones) and it is reported again with their results, as a
   * live turn's is; when they are all answered but the trace lists fewer tools, it is reported
   * again with every answered call.
   */
  priorStep?: StepTrace;
  newId?: () => string;
  /** The run's token, wall-time and tool-call budgets; an absent one is no limit. */
  budgets?: RunBudgets;
  /** The loop guard's repeat limit (see `detectLoop`); 0 turns it off. */
  loopRepeatLimit?: number;
  /** When resuming: the index in `history` of this run's first message (the loop guard counts from it). */
  runStart?: number;
  /** Offer the plan tools; the plan is derived from this run's messages and committed with the results that change it. */
  planning?: boolean;
  /** Input that joined the run, committed as user messages before each model request; absent: none. */
  pendingInput?: PendingInputHook;
}

export interface AgentRunResult {
  stopReason: StopReason;
  error: RunError | null;
  /** For every stop but `complete`: one sentence naming the step, the cause and what to try. */
  stopDetail: string | null;
  /** Where the run stopped (a caller that overrides the stop reason explains it from here). */
  stopPoint: StopPoint;
  /** The messages this call committed, in order. */
  messages: AgentMessage[];
  stats: RunStats;
}

/**
 * The agent loop: ask the model, execute the tools it proposes, feed the results
 * back, until the model makes no tool call, the turn budget is spent, the signal
 * fires, or something fails. It knows nothing of HTTP or SQL; all I/O is injected.
 * It throws only for an invalid history (law 4); every other failure is a value.
 */
export async function runAgent(params: RunAgentParams): Promise<AgentRunResult> {
  assertValidHistory(params.history, { allowPendingTail: params.input === undefined });
  const started = performance.now();
  const onStep = notifyOnly(params.onStep);
  const stats: RunStats = params.priorStats ? { ...params.priorStats } : emptyStats();
  const priorDuration = stats.durationMs;
  const runStart = params.input === undefined ? (params.runStart ?? params.history.length) : params.history.length;
  const plan: PlanState | null = params.planning ? { plan: planFromMessages(params.history.slice(runStart)) } : null;
  const ctx: LoopContext = {
    model: params.model,
    modelName: params.modelName,
    providerProfile: params.providerProfile,
    system: params.system,
    tools: new Map([...params.tools, ...(plan ? planTools(plan) : [])].map((tool) => [tool.name, tool])),
    beforeToolCall: params.beforeToolCall,
    commit: async (item, committedStats) => {
      const updated = plan && item.type === "message" ? planAfterCommit(plan, ctx.history, item.message) : null;
      await params.commit(updated && item.type === "message" ? { ...item, plan: updated } : item, committedStats);
      if (plan && updated) plan.plan = updated;
    },
    notify: notifyOnly(params.emit),
    checkpoint: params.checkpoint ?? (async () => {}),
    onStep: (step) => {
      stats.durationMs = priorDuration + Math.round(performance.now() - started);
      onStep(step, { ...stats });
    },
    signal: params.signal,
    contextMaxChars: params.contextMaxChars,
    maxToolCallsPerTurn: params.maxToolCallsPerTurn,
    newId: params.newId ?? randomUUID,
    history: [...params.history],
    // Ids unique in the whole conversation: some upstreams refuse a repeated tool-call id.
    usedToolCallIds: new Set(toolCallIdsIn(params.history)),
    stats,
    budgets: params.budgets ?? {},
    elapsedMs: () => priorDuration + (performance.now() - started),
  };
  params.onClock?.(ctx.elapsedMs);
  const firstNew = ctx.history.length;
  const repeatLimit = params.loopRepeatLimit ?? DEFAULT_LOOP_REPEAT_LIMIT;
  const finish = (stop: LoopStop, phase: StopPoint["phase"]): AgentRunResult => {
    stats.durationMs = priorDuration + Math.round(performance.now() - started);
    const turn = phase === "before_turn" ? stats.modelCalls + 1 : stats.modelCalls;
    const point: StopPoint = {
      phase,
      turn,
      ...("toolCall" in stop && stop.toolCall ? { toolCall: stop.toolCall } : {}),
    };
    return {
      stopReason: stop.stopReason,
      error: stop.stopReason === "error" ? stop.error : null,
      stopDetail: explain(stop, point, params.maxTurns, ctx.signal),
      stopPoint: point,
      messages: ctx.history.slice(firstNew),
      stats,
    };
  };
  /** After a turn's results are committed, before the next model request: the loop guard. */
  const loopStop = (): LoopStop | null => {
    const loop = detectLoop(ctx.history, repeatLimit, runStart);
    return loop ? { stopReason: "loop_detected", loop } : null;
  };

  if (params.input !== undefined) {
    // Checkpoint (a): cancelled before the run began: nothing is recorded.
    await ctx.checkpoint("input");
    if (ctx.signal.aborted) return finish({ stopReason: "aborted" }, "before_turn");
    const stop = await commitMessage(ctx, { id: ctx.newId(), role: "user", content: wellFormed(params.input) });
    if (stop) return finish(stop, "before_turn");
  } else {
    // Resuming: calls of the last assistant message that still lack results run first.
    const pending = pendingToolCalls(ctx.history);
    const { priorStep } = params;
    if (pending.length) {
      // Reported with each result, as in a live turn.
      const step = priorStep ? { ...priorStep, tools: answeredTraces(ctx.history) } : null;
      const stop = await runToolCalls(ctx, pending, step);
      if (stop) return finish(stop, "in_turn");
      const loop = loopStop();
      if (loop) return finish(loop, "after_turn");
    } else {
      // Every call is answered, but the stored trace may lack some (its full trace was not stored).
      const step = priorStep ? completedStep(priorStep, ctx.history) : null;
      if (step) ctx.onStep(step);
      // The last turn's results were committed before the guard looked at them (the run was
      // left in between): it looks now, before the next model request, as a live run's does.
      if (ctx.history.at(-1)?.role === "tool") {
        const loop = loopStop();
        if (loop) return finish(loop, "after_turn");
      }
    }
    // Law 2: the run's final reply is committed (its end was not), so it completes without
    // another request; input steered since is left to the host, as for a live run's final turn.
    if (endsInFinalReply(ctx.history, runStart)) return finish({ stopReason: "complete" }, "after_turn");
  }

  const specs = toolSpecs(ctx.tools);
  while (true) {
    if (ctx.signal.aborted) return finish({ stopReason: "aborted" }, "before_turn");
    if (stats.modelCalls >= params.maxTurns) return finish({ stopReason: "max_turns" }, "after_turn");
    const budget = spentBudget(ctx.budgets, stats, ctx.elapsedMs(), "model_request");
    if (budget) return finish({ stopReason: "budget_exhausted", budget }, "before_turn");
    await ctx.checkpoint("turn");
    if (ctx.signal.aborted) return finish({ stopReason: "aborted" }, "before_turn");
    if (params.pendingInput) {
      const taken = await takePendingInput(ctx, params.pendingInput);
      if (taken) return finish(taken, "before_turn");
      // Cancelled while the input was committed: kept, and no request is begun.
      if (ctx.signal.aborted) return finish({ stopReason: "aborted" }, "before_turn");
    }
    const turn = await runModelTurn(ctx, stats.modelCalls + 1, specs);
    if (turn.stop) {
      if (!turn.trace) return finish(turn.stop, "before_turn");
      ctx.onStep(turn.trace);
      return finish(turn.stop, "in_turn");
    }
    const calls = turn.assistant.toolCalls ?? [];
    // Law 2: the run completes because the model made no tool call (its trace went out with it).
    if (calls.length === 0) return finish({ stopReason: "complete" }, "after_turn");
    // The turn's trace is reported with its results (the last report holds them all).
    const stop = await runToolCalls(ctx, calls, turn.trace);
    if (stop) return finish(stop, "in_turn");
    const loop = loopStop();
    if (loop) return finish(loop, "after_turn");
  }
}

/** Every way the loop stops. */
type LoopStop =
  | PhaseStop
  | { stopReason: "complete" | "max_turns" }
  | { stopReason: "loop_detected"; loop: LoopFinding };

/** Who cancelled, from the signal's reason ("by a DELETE /runs/{id} request"). */
function cancelledBy(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name !== "AbortError" ? reason.message : "through its AbortSignal";
}

function explain(stop: LoopStop, point: StopPoint, maxTurns: number, signal: AbortSignal): string | null {
  switch (stop.stopReason) {
    case "complete":
      return null;
    case "max_turns":
      return describeStop({ stopReason: "max_turns", point, maxTurns });
    case "aborted":
      return describeStop({ stopReason: "aborted", point, by: cancelledBy(signal) });
    case "error":
      return describeStop({ stopReason: "error", point, error: stop.error, hint: stop.hint });
    case "loop_detected":
      return describeStop({ stopReason: "loop_detected", point, loop: stop.loop });
    case "budget_exhausted":
      return describeStop({ stopReason: "budget_exhausted", point, budget: stop.budget });
  }
}

function* toolCallIdsIn(history: readonly AgentMessage[]): Generator<string> {
  for (const message of history)
    if (message.role === "assistant") for (const call of message.toolCalls ?? []) yield call.id;
}
