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
   * Leaves the run for the next start to resume as after a crash. It is stopped where it is
   * (see `stop`), except that a tool that is executing is left to finish, within the
   * shutdown's grace period: its real result, and whatever the loop writes because of it
   * (a failure's "not executed" results, the run's end), is still written; the run stops
   * before it begins anything new (`beforeNewWork`).
   */
  suspend(): void {
    this.suspended = true;
    if (this.runningTool === null) this.stop();
  }

  /** Called once a tool's result is committed. */
  toolFinished(toolCallId: string): void {
    if (this.runningTool === toolCallId) this.runningTool = null;
  }

  /** Called before a model request, an approval or a tool begins: a suspended run stops there. */
  beforeNewWork(): void {
    if (this.suspended && !this.stopped) this.stop();
  }

  /** Sealed: nothing more is written, approvals stop waiting, the signal stops what runs. */
  get stopped(): boolean {
    return this.#stopped;
  }
  #stopped = false;

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
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
