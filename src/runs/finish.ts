import { completedStep } from "../agent/answered-traces.js";
import type { AgentMessage } from "../agent/messages.js";
import type { RunError } from "../agent/run-error.js";
import type { RunStats } from "../agent/stats.js";
import type { StepTrace } from "../agent/step-trace.js";
import type { StopReason } from "../agent/stop-reason.js";
import type { ToolOutcome } from "../agent/tool.js";
import { toolResultMessage } from "../agent/tool-results.js";
import type { RunView } from "../domain/run.js";
import { newId } from "../ids.js";
import { isConflict } from "../store/errors.js";
import { runView } from "../store/runs.js";
import type { RunChange, RunRecord, Store, ToolCallRecord } from "../store/store.js";
import type { LiveRun } from "./live-run.js";
import type { RunRecorder } from "./recorder.js";
import { planOfRun } from "./run-plan.js";
import type { Stamp, WriteBatch } from "./run-write.js";
import { ledgerAnnouncement } from "./undecided-result.js";

/** Picks the result a call still open at the end gets. */
export type OutcomeFor = (call: ToolCallRecord) => ToolOutcome;

/**
 * Law 4 at a run's end (or at recovery): a result for each call of `open`, as changes for
 * one batch (`messages`: the results). The loop stops only after the last call's result, so
 * open calls all belong to the last assistant message and their results keep the history valid.
 */
function closingResults(
  open: readonly ToolCallRecord[],
  outcomeFor: OutcomeFor,
  stamp: Stamp,
): WriteBatch & { messages: AgentMessage[] } {
  const changes = open.map((call) => ({
    kind: "message" as const,
    message: stamp(toolResultMessage({ id: newId("msg"), toolCallId: call.id, outcome: outcomeFor(call) })),
    tool: call.name,
  }));
  const messages = changes.map(({ message }) => message);
  return { changes, events: messages.map((message) => ({ type: "message", message })), messages };
}

/** Writes a result for each open call that `only` picks (recovery: the interrupted ones); returns how many. */
export async function closeOpenCalls({
  store,
  recorder,
  outcomeFor,
  only = () => true,
}: {
  store: Store;
  recorder: RunRecorder;
  outcomeFor: OutcomeFor;
  only?: (call: ToolCallRecord) => boolean;
}): Promise<number> {
  const open = (await store.toolCalls.open(recorder.runId)).filter(only);
  if (!open.length) return 0;
  await recorder.write((stamp) => closingResults(open, outcomeFor, stamp));
  return open.length;
}

export interface RunEnd {
  stopReason: StopReason;
  /** One sentence naming the step, the cause and what to try; null for `complete`. */
  stopDetail: string | null;
  error: RunError | null;
  stats: RunStats;
}

/**
 * The one way a run ends, for execution, cancellation and recovery alike: in one write, a
 * result for every call still open (a write that failed mid-turn leaves some), after the
 * announcement of any decision the ledger holds for one of them that the run's events do not
 * (see ledgerAnnouncement: a peer's, while the run's owner was lost), the run's final state
 * and its `run.finished` event. Resolves with the finished run; a run already
 * finished (or gone with its session), or with `from` no longer in that status (a queued run
 * that started meanwhile), is reported as it is. `end` may be decided late: a function is
 * called once what the write needs is read, and `decided` is told the finished run in the
 * same tick, before the write is queued (what is decided then is what is written). With
 * `retrace` (a run a process left, which no loop reports the steps of), the write also stores
 * the run's last step again with every call of its last assistant message that has a result,
 * the closing ones included, when the stored one lists fewer (see completedStep).
 */
export async function finishRun({
  store,
  recorder,
  record,
  end: endOrDecide,
  decided,
  outcomeFor,
  from,
  retrace = false,
}: {
  store: Store;
  recorder: RunRecorder;
  record: RunRecord;
  end: RunEnd | (() => RunEnd);
  decided?: (view: RunView) => void;
  outcomeFor: OutcomeFor;
  from?: "queued";
  retrace?: boolean;
}): Promise<RunView> {
  const [open, plan, last] = await Promise.all([
    store.toolCalls.open(record.id),
    planOfRun(store, record),
    retrace ? lastStepOf(store, record) : null,
  ]);
  const announce = (await Promise.all(open.map((call) => ledgerAnnouncement(store, call)))).flat();
  const end = typeof endOrDecide === "function" ? endOrDecide() : endOrDecide;
  const finishedAt = new Date().toISOString();
  const view: RunView = { ...runView(record, plan), status: "finished", ...end, finishedAt };
  decided?.(view);
  try {
    await recorder.write((stamp) => {
      const results = closingResults(open, outcomeFor, stamp);
      const step = last ? completedStep(last.step, [...last.history, ...results.messages]) : null;
      return {
        changes: [
          ...results.changes,
          ...(step ? [{ kind: "step" as const, step }] : []),
          { kind: "finish", ...end, finishedAt, ...(from ? { from } : {}) },
        ],
        events: [...announce, ...results.events, { type: "run.finished", run: view }],
      };
    });
  } catch (err) {
    if (!isConflict(err, "run_not_live")) throw err;
    const stored = await store.runs.get(record.id);
    return stored ? runView(stored, plan) : view;
  }
  return view;
}

/**
 * The run's stored step of its latest turn and the run's messages; null when it has no step,
 * or when they cannot be read: the end of a run whose recovery keeps failing (a read that
 * fails each time) is still written, its trace as it was.
 */
async function lastStepOf(
  store: Store,
  record: RunRecord,
): Promise<{ step: StepTrace; history: readonly AgentMessage[] } | null> {
  try {
    const step = await store.steps.last(record.id);
    return step ? { step, history: await store.messages.ofRun(record.sessionId, record.id) } : null;
  } catch {
    return null;
  }
}

/** A run left for the restart, as this process leaves it: unfinished. */
export async function suspendedView(store: Store, live: LiveRun): Promise<RunView> {
  const stored = await store.runs.get(live.id).catch(() => null);
  const record = stored ?? live.record;
  return runView(record, await planOfRun(store, record).catch(() => null));
}

/**
 * Commits the model's final reply (see LoopCommit's `final`) with the run's end `complete`
 * and its `run.finished`, in one write, unless the run is no longer running when the write's
 * turn comes (a DELETE, a shutdown, a planning run whose plan the end reads): then the reply
 * alone, with `changes`, and the run ends through finishRun. While the write is in flight the
 * run is `ending` (a DELETE then finds it finished); a failed write puts it back to running.
 * Resolves with the finished run, or null when only the reply was written.
 */
export async function commitFinalReply({
  live,
  message,
  stats,
  changes,
}: {
  live: LiveRun;
  message: AgentMessage;
  stats: RunStats;
  changes: RunChange[];
}): Promise<RunView | null> {
  const ended: { view: RunView | null } = { view: null };
  try {
    await live.recorder.write((stamp) => {
      const stored = stamp(message);
      const events = [{ type: "message" as const, message: stored }];
      const reply: RunChange = { kind: "message", message: stored };
      if (live.phase.name !== "running" || live.record.planning) return { changes: [reply, ...changes], events };
      const end: RunEnd = { stopReason: "complete", stopDetail: null, error: null, stats };
      const finishedAt = new Date().toISOString();
      const finished: RunView = { ...runView(live.record, null), status: "finished", ...end, finishedAt };
      ended.view = finished;
      live.phase = { name: "ending", view: finished, cancelled: false, reported: false };
      const others = changes.filter((change) => change.kind !== "stats");
      return {
        changes: [reply, ...others, { kind: "finish", ...end, finishedAt }],
        events: [...events, { type: "run.finished", run: finished }],
      };
    });
  } catch (err) {
    const { phase } = live;
    if (ended.view && phase.name === "ending" && phase.view === ended.view)
      live.phase = { name: "running", tool: null };
    // Cancelled through the store (by another instance) while the write was on its way: the
    // run is cancelling here too, and the reply is written alone (the run then ends aborted).
    if (isConflict(err, "cancel_requested") && live.cancelStored())
      return commitFinalReply({ live, message, stats, changes });
    throw err;
  }
  live.endStored = ended.view;
  return ended.view;
}
