import type { RunStatus, RunView } from "../agent/run-view.js";
import type { RunStats } from "../agent/stats.js";
import type { RunRecord } from "../store/runs.js";
import type { SessionRecord } from "../store/sessions.js";
import { PendingApprovals } from "./pending-approvals.js";
import type { RunRecorder } from "./run-recorder.js";

/** What this process holds for a run it is executing. */
export class LiveRun {
  readonly controller = new AbortController();
  readonly approvals = new PendingApprovals();
  status: Exclude<RunStatus, "finished"> = "running";
  /** Set by DELETE or shutdown: the run ends `aborted` whatever the loop was doing. */
  cancelRequested = false;
  /** The stats after the last finished turn, while the run is live. */
  stats: RunStats | null = null;
  /** Left for the next start to resume (shutdown with ON_RESTART=resume): writes nothing more. */
  suspended = false;
  /** The call whose tool is executing (its start is written, its result not yet). */
  runningTool: string | null = null;
  /** Continued after a restart: its ledger may already hold decisions. */
  resumed = false;
  /** Settles with the finished run; set when the run is launched. */
  done!: Promise<RunView>;

  constructor(
    readonly record: RunRecord,
    readonly session: SessionRecord,
    readonly recorder: RunRecorder,
  ) {}

  get id(): string {
    return this.record.id;
  }

  get sessionId(): string {
    return this.record.sessionId;
  }

  /**
   * Stops the run where it is without settling it, for the next start to resume as after a
   * crash: nothing more is written, approvals stop waiting (their timers too), and the
   * signal stops a model stream. A tool that is executing is left to finish (within the
   * shutdown's grace period) so that its real result is written; the run stops right after.
   */
  suspend(): void {
    this.suspended = true;
    if (this.runningTool === null) this.#stop();
  }

  /** Called once a tool's result is committed. */
  toolFinished(toolCallId: string): void {
    if (this.runningTool !== toolCallId) return;
    this.runningTool = null;
    if (this.suspended) this.#stop();
  }

  #stop(): void {
    this.recorder.seal();
    this.approvals.clear();
    this.controller.abort(new Error("the server is shutting down"));
  }

  cancel(reason: string): void {
    this.cancelRequested = true;
    this.approvals.clear();
    this.controller.abort(new Error(reason));
  }
}
