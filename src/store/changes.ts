import type { RunError } from "../agent/run-error.js";
import type { RunStats } from "../agent/stats.js";
import type { StepTrace } from "../agent/step-trace.js";
import type { StopReason } from "../agent/stop-reason.js";
import type { RunStatus } from "../domain/run.js";
import type { StoredMessage } from "../domain/stored-message.js";

/**
 * One change to a live run's data, as data: a batch of them is applied by the store in one
 * transaction with the events they cause (see Store.commitRun). The tool-call ledger
 * changes only through the `toolCall.*` changes.
 */
export type RunChange =
  /**
   * A committed message; an assistant message's calls enter the ledger as proposed, a tool result
   * finishes its call. A tool result's change names its call's tool (`tool`, the name the model
   * gave, as the ledger holds it): what observers of the write count it under; one the loop wrote
   * says whether that tool ran (`ran`; absent on the results a run's end or a recovery closes
   * calls with): a call whose start was stored may not have run. A result that
   * closes a call its run holds `undecided` (its approval was being waited for when the run was
   * cancelled or ran out of time) is refused (StoreConflictError `decided`) when the ledger
   * holds a decision for the call: one stored meanwhile, which the writer announces with it.
   */
  | { kind: "message"; message: StoredMessage; tool?: string; ran?: boolean; undecided?: boolean }
  | { kind: "toolCall.awaitingApproval"; toolCallId: string; reason: string; at: string }
  /**
   * Refused (StoreConflictError `decided`) when the call was already decided or is past
   * deciding, or its run's cancel was requested (the call ends aborted, undecided). An approval
   * given `approvalTimeoutMs` (APPROVAL_TIMEOUT_MS) is refused (`approval_expired`) when it is
   * later (`at`) than that after the call's request for approval (its stored time, whoever wrote
   * it): the timeout denies the call. A denial is never refused so.
   */
  | {
      kind: "toolCall.decided";
      toolCallId: string;
      decision: "approve" | "deny";
      reason: string | null;
      at: string;
      approvalTimeoutMs?: number;
    }
  | { kind: "toolCall.started"; toolCallId: string; at: string }
  /**
   * A status of an unfinished run; ignored once the run has finished, and, once a cancel was
   * requested (`cancelRequested`), any status but `cancelling`. `cancelledBy`: who cancelled
   * the run executing here (kept unless a cause is stored already, as RunAccess.cancelledBy
   * reads it), so that whoever ends it after a crash says so; no cancel request is stored.
   */
  | { kind: "status"; status: Exclude<RunStatus, "finished">; cancelledBy?: string }
  /**
   * A client asked to cancel the run (the first request's time and `by` kept); its status is
   * `cancelling` from now on. `by`: who asked, as the run's stop detail says it (see
   * RunAccess.cancelledBy); absent: not said.
   */
  | { kind: "cancelRequested"; at: string; by?: string }
  /** A turn's trace; a turn asked again after a restart replaces the lost attempt. */
  | { kind: "step"; step: StepTrace }
  /** The run's stats so far (of an unfinished run). */
  | { kind: "stats"; stats: RunStats }
  /**
   * The run's wall time so far (of an unfinished run), its other stats as stored: stored only
   * when above the stored `durationMs` (see LiveRun.saveDuration).
   */
  | { kind: "duration"; durationMs: number }
  /** Steered input the run takes (its user message is in the same batch); refused (`input_taken`) when not pending. */
  | { kind: "input.taken"; inputId: string }
  /**
   * The run's end; refused (StoreConflictError `run_not_live`) when it has already finished or
   * is gone, or, with `from`, when it is not in that status (a queued run that started meanwhile);
   * refused (`cancel_requested`) when it is not `aborted` and the run's cancel was requested
   * (by a `cancelRequested`, which another instance may have stored while this end was on its way).
   */
  | {
      kind: "finish";
      from?: "queued";
      stopReason: StopReason;
      stopDetail: string | null;
      error: RunError | null;
      stats: RunStats;
      finishedAt: string;
    };

export type RunChangeKind = RunChange["kind"];
