import type { RunStats } from "../agent/stats.js";
import { BECAUSE_SESSION_DELETED } from "../agent/stop-detail.js";
import { StopWithoutGrace } from "../agent/tool.js";
import type { RunView } from "../domain/run.js";
import type { RunRecord, SessionRecord } from "../store/store.js";
import { ApprovalWaiters } from "./approval-waiters.js";
import type { RunRecorder } from "./recorder.js";

/**
 * Where a live run is, as one value:
 * - `running`: the loop works; `tool` is the call whose tool executes (its start is stored);
 * - `awaiting_approval`: the loop waits for a person's decision;
 * - `cancelling`: DELETE or shutdown fired its signal; it ends `aborted` whatever the loop did;
 * - `suspending`: left for the next start (shutdown with ON_RESTART=resume) once the tool that
 *   executes returns: its real result is still written, nothing new begins;
 * - `stopped`: left for the next start; this process writes nothing more of it;
 * - `ending`: its end is decided and being written (a DELETE finds it finished with that
 *   end), or known and reported but not yet stored (storage fails; `reported`): written as
 *   soon as storage takes it.
 */
export type RunPhase =
  | { name: "running"; tool: string | null }
  | { name: "awaiting_approval" }
  | { name: "cancelling" }
  | { name: "suspending"; tool: string | null }
  | { name: "stopped" }
  | { name: "ending"; view: RunView; cancelled: boolean; reported: boolean };

/** Who cancels a run through DELETE /runs/{id} (here or on another instance), as its stop detail says it. */
export const BY_DELETE = "by a DELETE /runs/{id} request";

/** Who cancels the runs of a session DELETE /sessions/{id} deletes (on any instance), as their stop details say it. */
export const BY_SESSION_DELETE = BECAUSE_SESSION_DELETED;

/** Why a run stops when its lease is lost. */
export const LEASE_LOST = "this server no longer holds the run's lease: another instance has taken it over";

/** Why a run stops when one of its writes got no answer (see StorageError.outcomeUnknown). */
export const WRITE_UNCERTAIN =
  "a write of the run got no answer in time, so whether it was stored is unknown: the run continues from what is stored once its lease expires";
/** Why a run stops when its lease could not be renewed in time (the database failed or did not answer). */
export const LEASE_UNRENEWED = "this server could not renew the run's lease in time: another instance may take it over";

/**
 * The stops after which another instance may continue the run within moments (its lease is,
 * or is about to be, someone else's): they leave the run's tools no grace (StopWithoutGrace),
 * so nothing of a tool started here still runs when a peer takes the run over.
 */
const STOPS_WITHOUT_GRACE: ReadonlySet<string> = new Set([LEASE_LOST, LEASE_UNRENEWED, WRITE_UNCERTAIN]);

/** What this process holds for a run it executes: a cache of it and the means to control it. */
export class LiveRun {
  readonly controller = new AbortController();
  readonly waiters = new ApprovalWaiters();
  phase: RunPhase = { name: "running", tool: null };
  /** Continued after a restart: its ledger may already hold decisions. */
  resumed = false;
  /** Interrupted by a new run that takes its place: its end does not start the session's queue. */
  handedOver = false;
  /** The run's end, once stored with the model's final reply (see commitFinalReply); else null. */
  endStored: RunView | null = null;
  /** The stats last handed to the recorder (a cache: the run's row holds them). */
  savedStats: RunStats | null = null;
  /** The run's wall time so far in ms (the loop's clock) while its loop executes here; else null. */
  elapsedMs: (() => number) | null = null;
  /** Settles with the run's end as reported to waiters (stored, or known while storage fails). */
  readonly ended: Promise<RunView>;
  reportEnd!: (view: RunView) => void;
  /** Settles when this process no longer executes the run (its end stored, or left for the restart). */
  done!: Promise<RunView>;

  constructor(
    readonly record: RunRecord,
    readonly session: SessionRecord,
    readonly recorder: RunRecorder,
    /**
     * When this process began to hold the run (performance.now(): monotonic), no later than
     * the statement that took its lease was sent: a lease renewal sent later covers it.
     */
    readonly heldSince: number = performance.now(),
  ) {
    this.ended = new Promise((resolve) => {
      this.reportEnd = resolve;
    });
    // Another instance holds the run now, or a write's outcome is unknown: nothing more runs
    // here, and the run continues from what is stored (there, or after its lease expires).
    recorder.onLeft((why) => this.stop(why === "fenced" ? LEASE_LOST : WRITE_UNCERTAIN));
  }

  get id(): string {
    return this.record.id;
  }

  get sessionId(): string {
    return this.record.sessionId;
  }

  /** DELETE or shutdown asked for it: the run ends `aborted`. */
  get cancelRequested(): boolean {
    return this.phase.name === "cancelling" || (this.phase.name === "ending" && this.phase.cancelled);
  }

  get stopped(): boolean {
    return this.phase.name === "stopped";
  }

  /** Its end is reported and not yet stored: nothing of it executes any more, that end is written (fenced) once storage takes it. */
  get endReported(): boolean {
    return this.phase.name === "ending" && this.phase.reported;
  }

  toolStarted(toolCallId: string): void {
    if (this.phase.name === "running") this.phase = { name: "running", tool: toolCallId };
  }

  toolFinished(toolCallId: string): void {
    const { phase } = this;
    if ((phase.name === "running" || phase.name === "suspending") && phase.tool === toolCallId) {
      this.phase = { ...phase, tool: null };
    }
  }

  /**
   * Leaves the run for the next start to resume as after a crash: stopped where it is, except
   * that a tool that executes is left to finish, within the shutdown's grace period (its real
   * result, and whatever the loop writes because of it, is still written); the run then stops
   * at its next checkpoint.
   */
  suspend(): void {
    const { phase } = this;
    if (phase.name === "running" && phase.tool !== null) this.phase = { name: "suspending", tool: phase.tool };
    else if (phase.name === "running" || phase.name === "awaiting_approval") this.leave();
  }

  /** The loop's checkpoint: a suspended run stops here, before it begins anything new. */
  checkpoint(): void {
    if (this.phase.name === "suspending" && this.phase.tool === null) this.leave();
  }

  /**
   * Stopped for the next start to resume (see stop), with one last write while its loop
   * executes here: its stats with its wall time up to now, so that a resumed run counts on
   * from there (a wait for approval, a model request or a tool it cuts included).
   * `leftWritten` settles once that write is done.
   */
  leave(): void {
    if (this.phase.name === "stopped") return;
    const elapsed = this.elapsedMs;
    if (elapsed) {
      // The loop's latest counts (stored, or deferred to this write), else those stored at its start.
      const written = this.recorder.sealWithDuration(Math.round(elapsed()), this.savedStats ?? this.record.stats);
      this.leftWritten = written.catch(() => {});
    }
    this.stop();
  }

  /** The run's wall time last handed to the recorder by saveDuration (ms); 0 before any. */
  #durationSaved = 0;

  /**
   * Stores the run's wall time so far (a `duration` change, its other stats untouched) when
   * its loop executes here, running or waiting for approval, and what it last handed to the
   * recorder (its stats, or a duration) is `lagMs` or more behind: a crash (kill -9, a lost
   * host) then loses only the time since. A write that fails is tried again once the run is
   * `lagMs` behind again.
   */
  saveDuration(lagMs: number): void {
    const elapsed = this.elapsedMs;
    const { name } = this.phase;
    if (!elapsed || (name !== "running" && name !== "awaiting_approval")) return;
    const durationMs = Math.round(elapsed());
    const handed = Math.max(this.#durationSaved, (this.savedStats ?? this.record.stats).durationMs);
    if (durationMs - handed < lagMs) return;
    this.#durationSaved = durationMs;
    this.recorder.write(() => ({ changes: [{ kind: "duration", durationMs }], events: [] })).catch(() => {});
  }

  /** Settles once the last write of a run left for the next start is done, stored or not (see leave). */
  leftWritten: Promise<void> = Promise.resolve();

  /**
   * Sealed: nothing more is written, approvals stop waiting, the signal stops what runs (a
   * tool's process group is killed). The signal's reason says `reason` (a StopWithoutGrace for
   * the stops after which a peer may continue the run). A run `ending` is stopped too
   * (its lease is lost: its end is no longer this process's to store).
   */
  stop(reason = "the server is shutting down"): void {
    if (this.phase.name === "stopped") return;
    this.phase = { name: "stopped" };
    this.stoppedBecause = reason;
    this.recorder.seal();
    this.waiters.clear();
    this.controller.abort(STOPS_WITHOUT_GRACE.has(reason) ? new StopWithoutGrace(reason) : new Error(reason));
  }

  /** Why the run was stopped (see `stop`); null while it was not. */
  stoppedBecause: string | null = null;

  /** Who cancelled the run, as its stop detail says it ("by a DELETE /runs/{id} request"). */
  cancelReason = BY_DELETE;

  /**
   * For a run cancelled for a request found stored (see cancelStored): `unread` until who asked
   * is read from the store, before the run's end is written (cancelReason is BY_DELETE till
   * then), then `read` (cancelReason is the stored one, which the run's stop detail says).
   * Null for a run cancelled here, or not at all.
   */
  storedCause: "unread" | "read" | null = null;

  /**
   * Fires the signal; false when the run is past cancelling (already cancelled, stopped or
   * ending). `reason` goes on "the run was cancelled ..." in the run's stop detail.
   */
  cancel(reason: string): boolean {
    const { phase } = this;
    if (phase.name === "cancelling" || phase.name === "stopped" || phase.name === "ending") return false;
    this.phase = { name: "cancelling" };
    this.cancelReason = reason;
    this.waiters.clear();
    this.controller.abort(new Error(reason));
    return true;
  }

  /**
   * Cancels the run (see `cancel`) for a cancel request found stored, which the instance that
   * took it may have stored: who asked is read from the store before the run's end is written.
   */
  cancelStored(): boolean {
    const fired = this.cancel(BY_DELETE);
    if (fired) this.storedCause = "unread";
    return fired;
  }
}

/**
 * `view`, the run as stored, with the duration its loop counts now while `live` (the same
 * run) executes here: the stored one is as of the run's last write, and a wait (for an
 * approval, a tool, the model) counts on. A run executed elsewhere shows the stored one.
 */
export function withLiveDuration<V extends RunView | null>(view: V, live: LiveRun | undefined): V {
  if (view === null) return view;
  const elapsed = view.status === "finished" || !live?.elapsedMs ? 0 : Math.round(live.elapsedMs());
  return elapsed > view.stats.durationMs ? { ...view, stats: { ...view.stats, durationMs: elapsed } } : view;
}
