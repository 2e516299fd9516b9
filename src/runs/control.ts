import type { ToolCallDecision } from "../agent/approval.js";
import { wellFormed } from "../agent/messages.js";
import type { RunView } from "../domain/run.js";
import { type AppError, conflict, notFound, shuttingDown } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { isConflict } from "../store/errors.js";
import type { Store, ToolCallStatus } from "../store/store.js";
import { approvalTimedOut, ledgerDecision } from "./approval-ledger.js";
import { applyLedgerDecision, resolveApproval } from "./approvals.js";
import type { EventHub } from "./event-hub.js";
import { BY_DELETE, type LiveRun } from "./live-run.js";
import { cancelQueuedRun } from "./queue.js";
import type { LiveRuns } from "./registry.js";
import { storedRunView } from "./run-plan.js";

export interface ControlDeps {
  store: Store;
  hub: EventHub;
  registry: LiveRuns;
  accepting: () => boolean;
  /** APPROVAL_TIMEOUT_MS: an approval later than this after its request is the timeout's denial. */
  approvalTimeoutMs: number;
  /** The run as clients see it now. */
  get: (runId: string) => Promise<RunView | null>;
  /**
   * Settles once start-up recovery has (see RunManager.recovering), and the recovery under way
   * of `runId` if it was held for a slot (see HeldLeftRuns.recovering). A cancel (DELETE, or an
   * interrupting start) of a run not registered here waits for it, as a decision does: a run
   * the recovery had claimed and not yet resumed would otherwise get only a stored request,
   * which the run, resumed from the record read at its claim, never reads over a SQLite file
   * (over PostgreSQL, at the next safety poll): it went on, waiting for its approval while
   * shown `cancelling`.
   */
  recovered?: (runId: string) => Promise<unknown>;
  /**
   * Told of a cancel stored for a run not executed here: a run start-up recovery holds for a
   * free slot ends `aborted` now, cancelled `by` (see HeldLeftRuns.cancel).
   */
  cancelHeld?: (runId: string, by: string) => Promise<void>;
  /** MAX_CONCURRENT_RUNS: an interrupting start refuses to cancel a run whose end frees no slot here for its run. */
  maxConcurrentRuns?: number;
}

/**
 * Cancels a run: fires a live run's AbortSignal (its end, `aborted`, is written by the run's
 * own finish), and records the request in the run's status. A run unfinished but not executing
 * here gets a stored cancel request: the instance executing it acts on it (see
 * applyStoredRequests), and a restart ends a run left with one aborted; one start-up
 * recovery holds for a slot here ends `aborted` at once. A queued run ends `aborted` at once,
 * without running. `accepted` is false for a run that had already
 * finished. `by`: who cancels, as the run's stop detail says it (stored with the request, so
 * the instance executing the run says it too).
 */
export async function cancelRun(
  deps: ControlDeps,
  runId: string,
  by = BY_DELETE,
): Promise<{ run: RunView; accepted: boolean }> {
  if (!deps.registry.get(runId)) await deps.recovered?.(runId);
  const live = deps.registry.get(runId);
  // Stored by a start here and not registered yet: its registration stops it.
  if (!live) deps.registry.cancelStarting(runId, by);
  // Fired before anything is awaited: a decision queued earlier in this tick is still recorded.
  const firing = live?.cancel(by) ?? false;
  const view = await deps.get(runId);
  if (!view) throw notFound("run", runId);
  // A run this request cancelled may have finished since (aborted): it was live when it was.
  if (view.status === "finished" && !firing) return { run: view, accepted: false };
  if (view.status === "queued") {
    const record = await deps.store.runs.get(runId);
    const ended = record ? await cancelQueuedRun(deps, record, by) : view;
    // Started meanwhile: cancelled as the live run it now is.
    return ended.status === "finished" ? { run: ended, accepted: true } : cancelRun(deps, runId, by);
  }
  if (firing || !live || live.stopped) {
    const recorded = live && !live.stopped ? live.recorder : null;
    const request = async () => {
      await deps.store.commitRequest(runId, [{ kind: "cancelRequested", at: new Date().toISOString(), by }]);
      await deps.cancelHeld?.(runId, by);
      // A queued run that started meanwhile (or a held one resumed) may be registered here by now.
      deps.registry.get(runId)?.cancel(by);
    };
    try {
      if (recorded) {
        await recorded
          .write(() => ({ changes: [{ kind: "status", status: "cancelling", cancelledBy: by }], events: [] }))
          // Stopped meanwhile while accepting: taken over by another instance (this run's writes
          // were fenced), for which the request is stored.
          .catch((err) => (live?.stopped && deps.accepting() ? request() : Promise.reject(err)));
      } else await request();
    } catch {
      // The signal has fired: the run still ends aborted; only the status could not be shown.
    }
    if (firing) failpoint("after-cancel-request");
  }
  // Cancelled while it ran, it is answered as stored: cancelling (or finished), not with the end
  // its finish may have decided meanwhile and is writing (see RunManager.get).
  const stored = (await (firing ? storedRunView({ store: deps.store, runId }) : deps.get(runId))) ?? view;
  if (stored.status !== "finished") {
    // Cancelled here while it ran, it is cancelling even where its status could not be stored.
    return { run: firing ? { ...stored, status: "cancelling" } : stored, accepted: true };
  }
  // Ended aborted since this request found it unfinished (the instance executing it may end it
  // before this answer): answered as the request found it, `cancelling`; its end follows as
  // `run.finished`.
  if (stored.stopReason === "aborted" && view.status !== "finished") {
    return { run: { ...view, status: "cancelling" }, accepted: true };
  }
  // Finished otherwise than aborted: its end was stored before this request (a no-op; an end
  // stored after a cancel request is `aborted`).
  return { run: stored, accepted: stored.stopReason === "aborted" };
}

/** Whether a live run still acts on a decision (not cancelled, not left for the restart, not ended). */
const takesDecisions = (live: LiveRun): boolean =>
  live.phase.name === "running" || live.phase.name === "awaiting_approval" || live.phase.name === "suspending";

/**
 * Answers a pending approval. The ledger decides: the decision is written only for a call
 * still undecided, and the same decision again is answered again; a different one conflicts.
 * An approval later than APPROVAL_TIMEOUT_MS after the request (its stored time: a restart does
 * not start it over) is refused by the ledger, which is given the timeout's denial instead, so
 * it is answered 409 APPROVAL_CONFLICT and the call denied, wherever the run is (executing
 * here, held for a slot, resumed and not at the call yet, or without a live owner).
 */
export async function decideApproval(
  deps: ControlDeps,
  params: { runId: string; toolCallId: string; decision: ToolCallDecision["decision"]; reason?: string | null },
): Promise<ToolCallStatus> {
  const { runId, toolCallId, decision } = params;
  const live = deps.registry.get(runId);
  const approvalTimeoutMs = deps.approvalTimeoutMs;
  // Executed by another instance: the decision goes to the ledger, and that instance is woken
  // to act on it (a run without one finds it there when it is resumed).
  const toLedger = async (decided: ToolCallDecision) => {
    const pending = await deps.store.toolCalls.status(runId, toolCallId);
    if (pending?.state !== "awaiting_approval") return;
    const at = new Date().toISOString();
    const reason = decided.reason ?? null;
    try {
      await deps.store.commitRequest(runId, [
        { kind: "toolCall.decided", toolCallId, decision: decided.decision, reason, at, approvalTimeoutMs },
      ]);
    } catch (err) {
      if (!isConflict(err, "decided")) throw err;
    }
  };
  const resolve = async (run: LiveRun, decided: ToolCallDecision) => {
    try {
      await resolveApproval(run, { toolCallId, ...decided, approvalTimeoutMs });
    } catch (err) {
      // Taken over by another instance before this one noticed: the decision is that instance's.
      if (isConflict(err, "fenced") && deps.accepting()) return toLedger(decided);
      if (!isConflict(err, "decided")) throw err;
    }
  };
  const record = async (decided: ToolCallDecision) => {
    if (live && takesDecisions(live) && live.waiters.has(toolCallId)) {
      // Queued before anything is awaited: a cancel later in this tick comes after it.
      await resolve(live, decided);
    } else if (live?.resumed && takesDecisions(live)) {
      // A resumed run may not have reached the call yet: the decision goes to the ledger,
      // where the run finds it.
      const pending = await deps.store.toolCalls.status(runId, toolCallId);
      if (pending?.state === "awaiting_approval" && takesDecisions(live)) await resolve(live, decided);
    } else if ((!live || live.stopped) && deps.accepting()) {
      // A run stopped here while accepting lost its lease: it winds down, another instance holds it.
      await toLedger(decided);
    }
  };
  try {
    // Well-formed once, where it comes in: the ledger, its event and the model read the same text.
    await record({ decision, reason: params.reason == null ? null : wellFormed(params.reason) });
  } catch (err) {
    if (!isConflict(err, "approval_expired")) throw err;
    // A denial is never refused so: the call is denied, as its timeout would.
    await record({ decision: "deny", reason: approvalTimedOut(approvalTimeoutMs) });
  }
  // The run's status alone (as `get` would show it: a run ending here has finished), not its view:
  // a repeated decision, answered as the first was, reads nothing of the run's input.
  const status =
    deps.registry.ending(runId, { decided: true })?.status ?? (await deps.store.runs.access(runId))?.status;
  if (!status) throw notFound("run", runId);
  // The call's state, not its input: a repeated decision reads nothing of what the model sent.
  const call = await deps.store.toolCalls.status(runId, toolCallId);
  const refused = decisionRefusal(toolCallId, call, decision);
  if (refused) throw refused;
  if (call?.decision) return call;
  if (status === "finished") throw conflict("RUN_FINISHED", `run ${runId} has finished`);
  // A run left for the restart asks for this decision again there.
  if (!deps.accepting() && (!live || live.stopped)) throw shuttingDown();
  throw conflict("APPROVAL_NOT_PENDING", `tool call ${toolCallId} is not waiting for a decision (run is ${status})`);
}

/**
 * Why `decision` on call `toolCallId` (`call`, its ledger row) is refused whatever the run's
 * state: no approval was asked for it (404), or it was decided otherwise (409
 * APPROVAL_CONFLICT). Null when it may be taken, or was taken already.
 */
function decisionRefusal(
  toolCallId: string,
  call: ToolCallStatus | null,
  decision: ToolCallDecision["decision"],
): AppError | null {
  if (!call || call.approvalReason === null) return notFound("approval", toolCallId);
  if (call.decision && call.decision !== decision) {
    return conflict("APPROVAL_CONFLICT", `tool call ${toolCallId} was already decided: ${call.decision}`, {
      decision: call.decision,
    });
  }
  return null;
}

/**
 * Checks decisions on calls of run `runId` against its ledger before any is applied: throws
 * the refusal of the first that cannot be taken (see decisionRefusal; for a call undecided
 * that does not wait for one, 409 RUN_FINISHED or APPROVAL_NOT_PENDING). Each decision that
 * passes is then applied by decideApproval, which answers what changed meanwhile (a decision
 * by the approval timeout, say) as it would alone.
 */
export async function checkDecisions(
  store: Store,
  runId: string,
  decisions: readonly { toolCallId: string; decision: ToolCallDecision["decision"] }[],
): Promise<void> {
  for (const { toolCallId, decision } of decisions) {
    const call = await store.toolCalls.status(runId, toolCallId);
    const refused = decisionRefusal(toolCallId, call, decision);
    if (refused) throw refused;
    if (call?.decision || call?.state === "awaiting_approval") continue;
    const status = (await store.runs.access(runId))?.status;
    if (status === "finished") throw conflict("RUN_FINISHED", `run ${runId} has finished`);
    throw conflict("APPROVAL_NOT_PENDING", `tool call ${toolCallId} is not waiting for a decision (run is ${status})`);
  }
}

/**
 * Acts on what other instances stored for runs executing here: a cancel request fires the
 * run's signal; a decision in the ledger for a call the run waits on wakes it.
 */
export async function applyStoredRequests(store: Store, runs: readonly LiveRun[]): Promise<void> {
  const acting = runs.filter(takesDecisions);
  if (acting.length === 0) return;
  const cancelled = new Set(await store.runs.cancelRequested(acting.map((live) => live.id)));
  for (const live of acting) {
    if (cancelled.has(live.id)) {
      live.cancelStored();
      continue;
    }
    for (const toolCallId of live.waiters.ids()) {
      const call = await store.toolCalls.status(live.id, toolCallId);
      const decision = call && ledgerDecision(call);
      if (decision && takesDecisions(live)) await applyLedgerDecision(live, { toolCallId, decision });
    }
  }
}
