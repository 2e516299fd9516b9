import type { ClaimedRun } from "../store/store.js";
import { RunRecorder } from "./recorder.js";
import { closeInterruptedCalls, emptyReport, type RecoveryDeps, type RecoveryReport } from "./recovery.js";
import { recoverOrEnd } from "./recovery-retry.js";

export interface HeldLeftRunsDeps extends RecoveryDeps {
  /** How many more runs this process may take on now (MAX_CONCURRENT_RUNS less those it has; none once shutdown began). */
  freeSlots: () => number;
  /** Takes a slot at once, until `release` (see LiveRuns.reserve). */
  reserve: () => { release: () => void };
}

const somethingDone = (report: RecoveryReport) => report.resumed.length > 0 || report.aborted.length > 0;

/**
 * The runs a previous process left over a SQLite file that start-up recovery claimed to
 * resume beyond MAX_CONCURRENT_RUNS (no later pass would take them up): held here in claim
 * order, still `running` as stored (their sessions busy, their watchers waiting for their
 * events, a decision for one stored for it to find), and each recovered (see recoverOrEnd)
 * from its record as stored then, once a slot is free here: a slot given back goes to them
 * before the queues (`slotFreed`). A cancel of a held run ends it at once (`cancel`). Once
 * shutdown began none is recovered: they are left for the next start, which claims them again.
 */
export class HeldLeftRuns {
  /** In claim order. */
  readonly #held = new Map<string, ClaimedRun>();
  /** The recoveries of held runs under way, by run id: each settles once its run is registered here, or ended. */
  readonly #recovering = new Map<string, Promise<void>>();
  /** The pass under way (see recover), until it has settled; null when none is. */
  #pass: Promise<void> | null = null;
  /** Whether a pass is still taking runs (it looks for a free slot again before it ends). */
  #taking = false;

  constructor(private readonly deps: HeldLeftRunsDeps) {}

  /**
   * Holds `run` once each of its calls whose tool had started has its INTERRUPTED result, into
   * `report` (see closeInterruptedCalls: that executes nothing and needs no slot, so no history
   * shows a call without a result while its run waits). Writing them may fail: the run's
   * recovery writes them then.
   */
  async hold(run: ClaimedRun, report: RecoveryReport): Promise<void> {
    const { store, hub, logger } = this.deps;
    const { id: runId, sessionId } = run.record;
    try {
      const recorder = await RunRecorder.open({ store, hub, runId, sessionId, lease: run.lease });
      try {
        report.interruptedToolCalls += await closeInterruptedCalls({ store, recorder });
      } finally {
        recorder.dispose();
      }
    } catch (err) {
      logger.warn({ err, runId }, "could not close the interrupted calls of a run held for a free slot");
    }
    this.#held.set(runId, run);
  }

  /**
   * Recovers the held runs, oldest first, while a slot is free here (each takes one from before
   * its record is read until it is registered), into `report`, which then names the runs still
   * held. One pass at a time: this one begins once the one under way has ended.
   */
  async recover(report = emptyReport()): Promise<RecoveryReport> {
    while (this.#pass) await this.#pass;
    const pass = this.#whileRoom(report);
    this.#pass = pass;
    try {
      await pass;
    } finally {
      if (this.#pass === pass) this.#pass = null;
    }
    report.held.push(...this.#held.keys());
    return report;
  }

  /** A slot was given back here: held runs take it (a pass still taking runs sees it itself). */
  slotFreed(): void {
    if (this.#taking || this.#held.size === 0 || this.deps.freeSlots() <= 0) return;
    this.recover().then(
      (report) => somethingDone(report) && this.deps.logger.info(report, "resumed runs held for a free slot"),
      (err) => this.deps.logger.error({ err }, "could not resume the runs held for a free slot"),
    );
  }

  /** Settles once `runId`'s recovery under way, if any, has (its run registered here, or ended). */
  recovering(runId: string): Promise<void> {
    return this.#recovering.get(runId) ?? Promise.resolve();
  }

  /**
   * A cancel of `runId` was stored (see cancelRun): a held run is recovered now, without a
   * slot, and ends `aborted`, cancelled `by` (its session's queue then goes on); a held run
   * being recovered is waited for (see `recovering`: the caller cancels it if it is registered
   * here). Nothing for any other run.
   */
  async cancel(runId: string, by: string): Promise<void> {
    const held = this.#held.get(runId);
    if (!held) return this.recovering(runId);
    this.#held.delete(runId);
    const report = emptyReport();
    await this.#recoverOne(held, report, by);
    if (!somethingDone(report)) return;
    this.deps.logger.info(report, "ended a run held for a free slot: it was cancelled");
    // Its session's queue goes on: runs queued behind it, and those made of the input it left.
    const { sessionId } = held.record;
    this.deps.manager
      .startQueued(sessionId)
      .catch((err) => this.deps.logger.error({ err, sessionId }, "could not start the session's next queued run"));
  }

  async #whileRoom(report: RecoveryReport): Promise<void> {
    this.#taking = true;
    try {
      for (let next = this.#oldest(); next && this.deps.freeSlots() > 0; next = this.#oldest()) {
        this.#held.delete(next.record.id);
        const slot = this.deps.reserve();
        try {
          await this.#recoverOne(next, report);
        } finally {
          slot.release();
        }
      }
    } finally {
      this.#taking = false;
    }
  }

  #oldest(): ClaimedRun | undefined {
    return this.#held.values().next().value;
  }

  /** Recovers a run no longer held, as stored now (a cancel may have come meanwhile); failures are logged. */
  #recoverOne(claimed: ClaimedRun, report: RecoveryReport, cancelledBy?: string): Promise<void> {
    const runId = claimed.record.id;
    const { store, logger } = this.deps;
    const recovery = (async () => {
      const record = await store.runs.get(runId);
      // Ended or deleted meanwhile: nothing is left to recover.
      if (!record || record.status === "finished") return;
      await recoverOrEnd(this.deps, { record, lease: claimed.lease }, report, { cancelledBy });
    })().catch((err) => logger.error({ err, runId }, "could not recover a run held for a free slot"));
    this.#recovering.set(runId, recovery);
    return recovery.finally(() => this.#recovering.delete(runId));
  }
}
