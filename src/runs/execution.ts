import type { Logger } from "pino";
import type { LoopCommit } from "../agent/events.js";
import { InputWithdrawnError } from "../agent/loop-context.js";
import type { ModelClient } from "../agent/model.js";
import { runAgent } from "../agent/run-agent.js";
import { emptyStats, type RunStats } from "../agent/stats.js";
import type { StepTrace } from "../agent/step-trace.js";
import type { AnyAgentTool } from "../agent/tool.js";
import { abortedOutcome, notExecutedOutcome, resultLostOutcome } from "../agent/tool-results.js";
import type { ApprovalCeiling } from "../domain/approval-ceiling.js";
import type { RunView } from "../domain/run.js";
import { failpoint } from "../failpoints.js";
import { newId } from "../ids.js";
import { type LineLogger, lazyChild } from "../logger.js";
import { isConflict } from "../store/errors.js";
import type { RunChange, SessionRecord, Store } from "../store/store.js";
import { approvalGate } from "./approvals.js";
import { commitFinalReply, type RunEnd, suspendedView } from "./finish.js";
import { finishWithRetry } from "./finish-retry.js";
import type { HistoryTail, SessionHistory } from "./history-tail.js";
import { LEASE_LOST, LEASE_UNRENEWED, type LiveRun, WRITE_UNCERTAIN } from "./live-run.js";
import { hostFailure, loopFailure } from "./run-failure.js";
import { failedDetail } from "./stop-details.js";
import { commitUndecidedResult } from "./undecided-result.js";

export interface ExecutionDeps {
  store: Store;
  model: ModelClient;
  defaultModel?: string;
  /** The tools a session's runs may use, bound to its workspace. */
  toolsFor: (session: SessionRecord) => AnyAgentTool[];
  approvalTimeoutMs: number;
  /** APPROVAL_POLICY_MAX; absent: no ceiling. */
  approvalCeiling?: ApprovalCeiling;
  /** Tool calls of one model reply that are executed (MAX_TOOL_CALLS_PER_TURN). */
  maxToolCallsPerTurn?: number;
  /** How long a run's end may fail to be stored before it is reported anyway (see finishWithRetry). */
  finishReportMs: number;
  /** False once shutdown began. */
  accepting: () => boolean;
  /** Where a run reads its session's history from (a cache of the store's). */
  history: HistoryTail;
  logger: Logger;
}

/** What a run starts from: its input (a new run) or its stats and last step (a resumed one). */
export interface ExecuteParams {
  input?: string;
  priorStats?: RunStats;
  priorStep?: StepTrace;
  /** Called once the run's input is committed, or the run ended before it was. */
  onInputSettled?: () => void;
  /** The session's history, read since the run was stored; else read at the run's start. */
  history?: SessionHistory;
}

/**
 * The loop's writes as RunChanges: a message (with the ledger and stats it changes) or a
 * tool's start. Every write but a user message's stores the run's stats, so a tool's result
 * also stores the wall time the tool took (a resumed run counts on from the stored duration).
 */
function commit(store: Store, live: LiveRun, item: LoopCommit, stats: RunStats): Promise<void> {
  const counted: RunChange = { kind: "stats", stats };
  if (item.type === "tool.started") {
    // Durable before the tool runs: after a crash the ledger says it had started.
    const changes: RunChange[] = [
      { kind: "toolCall.started", toolCallId: item.toolCallId, at: new Date().toISOString() },
      counted,
    ];
    // Marked first: a shutdown meanwhile lets the tool finish rather than stop the run under it.
    live.toolStarted(item.toolCallId);
    return live.recorder
      .write(() => ({ changes, events: [item] }))
      .then(
        () => {
          live.savedStats = stats;
        },
        (err: unknown) => {
          live.toolFinished(item.toolCallId);
          // Cancelled through the store (by another instance) before the start was stored: the
          // tool does not run, and the run ends aborted.
          if (isConflict(err, "cancel_requested")) live.cancelStored();
          throw err;
        },
      );
  }
  const { message } = item;
  const storesStats = message.role !== "user";
  const changes: RunChange[] = storesStats ? [counted] : [];
  if (item.final && !item.plan) {
    return commitFinalReply({ live, message, stats, changes }).then(() => {
      live.savedStats = stats;
    });
  }
  // Steered input becomes this message: taken from the store in its write (once, whoever writes it).
  if (item.inputId !== undefined) changes.push({ kind: "input.taken", inputId: item.inputId });
  // A result that changed the plan announces the plan in the same write.
  const also = {
    tool: item.tool,
    ran: item.ran,
    changes,
    events: item.plan ? [{ type: "plan.updated" as const, plan: item.plan }] : [],
  };
  const written =
    item.undecided && message.role === "tool"
      ? commitUndecidedResult(store, live, message, also)
      : live.recorder.commitMessage(message, also);
  // Steered input withdrawn since it was read (see Store.inputs.withdraw): skipped, the run goes on.
  const refused = (err: unknown) => {
    throw item.inputId !== undefined && isConflict(err, "input_taken") ? new InputWithdrawnError() : err;
  };
  return written.catch(refused).then(() => {
    if (storesStats) live.savedStats = stats;
    if (message.role === "assistant" && message.toolCalls?.length) failpoint("after-assistant-commit");
    if (message.role === "tool") {
      failpoint("after-tool-result-commit");
      live.toolFinished(message.toolCallId);
    }
  });
}

/**
 * The loop's I/O with the store, failing with a HostFailure: the run's clients are told the
 * failure's kind, and the log has the failure itself (a conflict, a rule of the data the run
 * handles, is not logged).
 */
function toldFailures<T>(io: () => Promise<T>, log: LineLogger, doing: string): Promise<T> {
  return io().catch((err: unknown) => {
    if (err instanceof InputWithdrawnError) throw err;
    if (!isConflict(err)) log.error({ err }, `could not ${doing}`);
    throw hostFailure(err);
  });
}

/** What the checkpoint hook returns: the check itself is synchronous here. */
const SETTLED = Promise.resolve();

/** Whether two stats agree on everything but the duration. */
const sameCounts = (a: RunStats, b: RunStats | null): boolean =>
  b !== null &&
  a.modelCalls === b.modelCalls &&
  a.toolCalls === b.toolCalls &&
  a.turns === b.turns &&
  a.inputTokens === b.inputTokens &&
  a.outputTokens === b.outputTokens;

/** A run this process stopped executing without ending it (shutdown, or its lease was lost). */
function leftHere(deps: ExecutionDeps, live: LiveRun, log: LineLogger): Promise<RunView> {
  if (live.stoppedBecause === LEASE_LOST) log.warn("stopped the run: another instance took it over");
  if (live.stoppedBecause === WRITE_UNCERTAIN) {
    log.warn(
      "stopped the run: a write got no answer in time; the run continues from what is stored once its lease expires",
    );
  }
  if (live.stoppedBecause === LEASE_UNRENEWED) {
    log.warn("stopped the run: its lease could not be renewed in time (another instance may take it over)");
  }
  // Read once the run's last write (its stats as it was left: see LiveRun.leave) is done.
  return live.leftWritten.then(() => suspendedView(deps.store, live));
}

/**
 * Runs the loop for a live run and writes its end. Resolves with the run as this process
 * leaves it: finished, or unfinished for the restart when it was stopped.
 */
export async function executeRun(deps: ExecutionDeps, live: LiveRun, params: ExecuteParams): Promise<RunView> {
  const log = lazyChild(deps.logger, { runId: live.id, sessionId: live.sessionId });
  const askApproval = approvalGate(deps, live);
  log.info({ resumed: live.resumed }, "run started");
  let inputPending = params.input !== undefined;
  const inputSettled = () => {
    if (inputPending) params.onInputSettled?.();
    inputPending = false;
  };
  let end: Parameters<typeof finishWithRetry>[0]["end"];
  try {
    const { stored, messages: history } = params.history ?? (await deps.history.read(live.sessionId));
    // Where this run's own messages begin: the loop guard counts its calls from there.
    const runStart = stored.findIndex((m) => m.runId === live.id);
    end = await runAgent({
      model: deps.model,
      modelName: live.session.model ?? deps.defaultModel,
      providerProfile: live.session.providerProfile ?? undefined,
      system: live.session.system ?? undefined,
      tools: deps.toolsFor(live.session),
      history,
      input: params.input,
      beforeToolCall: (request) => toldFailures(() => askApproval(request), log, "ask for approval"),
      commit: (item, stats) => {
        const saved = toldFailures(() => commit(deps.store, live, item, stats), log, "save the run's progress");
        return inputPending ? saved.finally(inputSettled) : saved;
      },
      emit: (notice) => live.recorder.buffer(notice),
      checkpoint: () => {
        live.checkpoint();
        return SETTLED;
      },
      onStep: (step, stats) => {
        // Held for the run's next write: a step reported with a tool result (just before it is
        // committed) is stored in that result's transaction.
        live.recorder.defer({ kind: "step", step });
        // Saved with the step unless only the clock moved since the stats last saved.
        if (!sameCounts(stats, live.savedStats)) live.recorder.defer({ kind: "stats", stats });
        live.savedStats = stats;
      },
      signal: live.controller.signal,
      maxTurns: live.record.maxTurns,
      maxToolCallsPerTurn: deps.maxToolCallsPerTurn,
      contextMaxChars: live.record.contextMaxChars ?? undefined,
      priorStats: params.priorStats,
      onClock: (elapsedMs) => {
        live.elapsedMs = elapsedMs;
      },
      priorStep: params.priorStep,
      newId: () => newId("msg"),
      budgets: {
        maxTokens: live.record.maxTokens ?? undefined,
        maxDurationMs: live.record.maxDurationMs ?? undefined,
        maxToolCalls: live.record.maxToolCalls ?? undefined,
      },
      loopRepeatLimit: live.record.loopRepeatLimit,
      runStart: runStart < 0 ? history.length : runStart,
      planning: live.record.planning,
      pendingInput: () => toldFailures(() => deps.store.inputs.pending(live.id), log, "read the run's steered input"),
    });
  } catch (err) {
    live.elapsedMs = null;
    inputSettled();
    if (live.stopped) return leftHere(deps, live, log);
    log.error({ err }, "run failed");
    const stats = params.priorStats ?? emptyStats();
    const { error, hint } = loopFailure(err);
    end = { stopReason: "error", stopDetail: failedDetail(error, stats, hint), error, stats } satisfies RunEnd;
  }
  // The run's duration is its end's from here on.
  live.elapsedMs = null;
  inputSettled();
  if (live.stopped) return leftHere(deps, live, log);
  if (live.endStored) {
    live.reportEnd(live.endStored);
    logFinished(log, live.endStored);
    return live.endStored;
  }
  if (end.stopReason === "error") log.warn({ error: end.error }, "run ended with an error");
  const finished = await finishWithRetry({
    deps,
    live,
    end,
    outcomeFor: (call, stopReason) =>
      call.state === "started"
        ? resultLostOutcome()
        : stopReason === "aborted"
          ? abortedOutcome()
          : notExecutedOutcome(),
  });
  if (finished.status === "finished") logFinished(log, finished);
  return finished;
}

function logFinished(log: LineLogger, run: RunView): void {
  log.info({ stopReason: run.stopReason, stopDetail: run.stopDetail, stats: run.stats }, "run finished");
}
