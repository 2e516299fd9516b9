import type { ClaimScope } from "../store/store.js";
import { HeldLeftRuns, type HeldLeftRunsDeps } from "./held-left-runs.js";
import { LEASE_LOST, LEASE_UNRENEWED, type LiveRun } from "./live-run.js";
import { emptyReport, type RecoveryReport, recoverRun, settleQueues, toResume } from "./recovery.js";
import { recoverOrEnd } from "./recovery-retry.js";

/** This process as an owner of runs: its id and how long a lease it takes holds. */
export interface InstanceIdentity {
  id: string;
  leaseMs: number;
}

export interface OwnershipDeps extends HeldLeftRunsDeps {
  instance: InstanceIdentity;
  /** The runs this process executes now. */
  liveRuns: () => LiveRun[];
  /** Sends a claim leaving alone the runs this process executes (see LiveRuns.claimBeside). */
  claimBeside<T>(claim: (executed: string[]) => Promise<T>): Promise<T>;
}

/** The most runs one reaper pass claims, whatever the free slots (a pass is one statement). */
const MAX_CLAIM = 100;
/**
 * A lease not renewed for this share of its TTL is treated as lost here: measured from when
 * the last renewal that succeeded was sent, before the database started its TTL, so the run
 * stops at least a tenth of the TTL before a peer may claim it (the margin covers the rates of
 * the two clocks and the timer's lateness).
 */
const SELF_EXPIRY = 0.9;

/** Elapsed time here: monotonic, so a step of the wall clock (NTP, a VM restored) moves no deadline. */
const now = (): number => performance.now();

/**
 * Ownership of runs by lease, for this process. At start it claims the runs left without an
 * owner (over a SQLite file, which no other process can open: every live run), never one this
 * process executes already (a client may start runs before the start-up claim); over a file
 * the runs to resume beyond the free slots wait for one (see HeldLeftRuns), and a run whose
 * recovery fails is tried again, then ends `error` (see recoverOrEnd). Over a shared
 * database it then renews the leases of the runs it executes every third of their TTL, in one statement,
 * and stops a run whose lease it no longer holds (or could not renew in time: a peer may have
 * claimed it), killing its tools; and it reaps: claims runs whose lease has expired (their
 * instance was lost, paused or partitioned, or gave them up at shutdown) and recovers them
 * as start-up recovery does.
 */
export class RunOwnership {
  #timers: NodeJS.Timeout[] = [];
  /** Stores the wall time of the runs executing here (see start). */
  #durations: NodeJS.Timeout | null = null;
  #reaping: Promise<RecoveryReport> | null = null;
  #again = false;
  /**
   * For each run, when the last renewal that succeeded and covered it was sent (performance.now()).
   * A renewal covers the runs it named only: one sent while a run was being set up renews nothing of it.
   */
  readonly #renewedAt = new WeakMap<LiveRun, number>();
  /** Fires at the earliest self-expiry of a run held here (see #armExpiry). */
  #expiry: NodeJS.Timeout | null = null;
  /** The runs the start-up claim holds for a free slot (over a SQLite file). */
  readonly held: HeldLeftRuns;

  constructor(private readonly deps: OwnershipDeps) {
    this.held = new HeldLeftRuns(deps);
  }

  /** The claim at start (see the class); resolves with what it recovered. */
  async recoverAtStart(): Promise<RecoveryReport> {
    const scope: ClaimScope = this.deps.store.shared ? "expired+own" : "all";
    // Over a file every left run is claimed now (no later pass would): those beyond the free slots are held.
    const limit = this.deps.store.shared ? this.deps.freeSlots() : Number.MAX_SAFE_INTEGER;
    const report = await this.#claim(scope, limit, { besideLive: true });
    await settleQueues(this.deps, report);
    const { resumed, aborted, started, requeuedInputs, held } = report;
    if (resumed.length || aborted.length || started.length || requeuedInputs || held.length)
      this.deps.logger.info(report, "settled runs left by a previous process");
    return report;
  }

  /**
   * Starts storing the wall time of the runs executing here every third of the lease's TTL, for
   * those whose stored one lags by half that or more (so a crash loses at most about half the
   * TTL of it: see LiveRun.saveDuration), and, over a shared database, renewing and reaping.
   */
  start(): void {
    if (this.#durations) return;
    const { leaseMs } = this.deps.instance;
    const every = Math.max(1, Math.floor(leaseMs / 3));
    this.#durations = setInterval(() => {
      for (const run of this.deps.liveRuns()) run.saveDuration(every / 2);
    }, every);
    this.#durations.unref();
    if (!this.deps.store.shared || this.#timers.length) return;
    const renew = setInterval(() => void this.renew(), every);
    const reap = setInterval(() => void this.reap(), Math.max(1, Math.min(1000, Math.floor(leaseMs / 3))));
    renew.unref();
    reap.unref();
    this.#timers.push(renew, reap);
  }

  stop(): void {
    if (this.#durations) clearInterval(this.#durations);
    this.#durations = null;
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    if (this.#expiry) clearTimeout(this.#expiry);
    this.#expiry = null;
  }

  /**
   * One renewal of every lease held here; runs whose lease is gone are stopped, and so are
   * runs not renewed in time (a renewal that fails, or that has not answered yet).
   */
  async renew(): Promise<void> {
    const { store, instance, logger } = this.deps;
    const sentAt = now();
    // The renewals sent before may still be waiting for an answer.
    this.#stopStale();
    // Runs taken since the last arming have their own deadline (this renewal may hang).
    this.#armExpiry();
    const live = this.deps.liveRuns().filter((run) => run.recorder.lease !== null);
    if (!live.length) return;
    let held: Set<string>;
    try {
      const leases = await store.leases.renew({
        owner: instance.id,
        ttlMs: instance.leaseMs,
        runIds: live.map((run) => run.id),
      });
      held = new Set(leases.map((lease) => `${lease.runId}:${lease.epoch}`));
      for (const run of live) this.#renewedAt.set(run, Math.max(this.#renewedAt.get(run) ?? sentAt, sentAt));
    } catch (err) {
      logger.warn({ err }, "leases could not be renewed; trying again");
      this.#stopStale(err);
      return;
    } finally {
      this.#armExpiry();
    }
    for (const run of live) {
      const lease = run.recorder.lease as { runId: string; epoch: number };
      if (held.has(`${lease.runId}:${lease.epoch}`)) continue;
      logger.warn({ runId: run.id, epoch: lease.epoch }, "lost the lease of a run: another instance took it over");
      run.stop(LEASE_LOST);
    }
  }

  /** When `run`'s lease is treated as lost here (performance.now()): see SELF_EXPIRY. */
  #expiresAt(run: LiveRun): number {
    // A renewal that named the run was sent after it was held: its time, when there is one, is the later.
    return (this.#renewedAt.get(run) ?? run.heldSince) + this.deps.instance.leaseMs * SELF_EXPIRY;
  }

  /**
   * The leased runs held here that may still execute something: not stopped, and not waiting
   * only to store an end already reported. Such a run keeps its lease however late its
   * renewal: the write of that end is fenced by the lease's epoch, so it is stored only if no
   * other instance has claimed the run since, and otherwise refused (the run then stops here).
   */
  #leased(): LiveRun[] {
    return this.deps.liveRuns().filter((run) => run.recorder.lease !== null && !run.stopped && !run.endReported);
  }

  /** Stops the runs whose lease is treated as lost (see SELF_EXPIRY), killing their tools. */
  #stopStale(err?: unknown): void {
    const late = this.#leased().filter((run) => now() >= this.#expiresAt(run));
    if (!late.length) return;
    this.deps.logger.error({ err, runs: late.map((r) => r.id) }, "leases could not be renewed in time");
    for (const run of late) run.stop(LEASE_UNRENEWED);
  }

  /**
   * Arms the self-expiry for the earliest of the runs held here: it fires on time whatever the
   * renewals do (one that hangs does not delay it to the next renewal's tick). Re-armed by each
   * renewal, and by itself for the runs left.
   */
  #armExpiry(): void {
    if (this.#expiry) clearTimeout(this.#expiry);
    this.#expiry = null;
    if (!this.#timers.length) return;
    const next = Math.min(...this.#leased().map((run) => this.#expiresAt(run)));
    if (next === Number.POSITIVE_INFINITY) return;
    this.#expiry = setTimeout(
      () => {
        this.#expiry = null;
        this.#stopStale();
        this.#armExpiry();
      },
      Math.max(0, Math.ceil(next - now())),
    );
    this.#expiry.unref();
  }

  /**
   * One reaper pass (a pass asked for while one runs is done right after it); none once shutdown
   * began. The expired runs it would end (see toResume: those with a cancel requested, or
   * every run with ON_RESTART=abort) are claimed whatever the free slots: ending one `aborted`
   * executes nothing and takes no slot (as a DELETE of a run held for a slot over a SQLite file
   * ends it at once: see HeldLeftRuns.cancel), so a cancel answered 202 is followed by its
   * `run.finished` while every instance is at MAX_CONCURRENT_RUNS. Then those to resume are
   * claimed, up to the free slots (the runs claimed to end never count against them).
   */
  reap(): Promise<RecoveryReport> {
    if (this.#reaping) {
      this.#again = true;
      return this.#reaping;
    }
    this.#reaping = (async () => {
      const report = emptyReport();
      do {
        this.#again = false;
        if (!this.deps.manager.accepting) break;
        const resume = this.deps.mode === "resume";
        for (const cancelled of resume ? [true, false] : [undefined]) {
          const limit = cancelled === false ? Math.min(MAX_CLAIM, this.deps.freeSlots()) : MAX_CLAIM;
          const pass = await this.#claim("expired", limit, { cancelled }).catch((err) => {
            this.deps.logger.warn({ err }, "the reaper could not claim runs; trying again");
            return emptyReport();
          });
          report.resumed.push(...pass.resumed);
          report.aborted.push(...pass.aborted);
          report.interruptedToolCalls += pass.interruptedToolCalls;
        }
      } while (this.#again);
      // Queues whose run ahead ended on an instance that was lost before it started the next.
      await settleQueues(this.deps, report).catch((err) =>
        this.deps.logger.warn({ err }, "the reaper could not move the queues on; trying again"),
      );
      if (report.resumed.length || report.aborted.length || report.started.length || report.requeuedInputs)
        this.deps.logger.info(report, "took over runs whose lease had expired");
      return report;
    })().finally(() => {
      this.#reaping = null;
    });
    return this.#reaping;
  }

  /** Gives up every lease held here (shutdown, once the runs are stopped): a peer takes them at once. */
  async release(): Promise<number> {
    this.stop();
    if (!this.deps.store.shared) return 0;
    const released = await this.deps.store.leases.release(this.deps.instance.id).catch((err) => {
      this.deps.logger.warn({ err }, "could not give up the leases of the stopped runs; they expire instead");
      return 0;
    });
    if (released) this.deps.logger.info({ released }, "gave up the leases of the stopped runs");
    return released;
  }

  /**
   * `besideLive`: the runs this process executes are left alone (else only their expiry keeps
   * them); `cancelled`: see RunClaimQuery.
   */
  async #claim(
    scope: ClaimScope,
    limit: number,
    { besideLive = false, cancelled }: { besideLive?: boolean; cancelled?: boolean } = {},
  ): Promise<RecoveryReport> {
    const report = emptyReport();
    if (limit <= 0) return report;
    const { store, instance, logger } = this.deps;
    // The leases run from before their claim was sent, however long recovering each one takes.
    let heldSince = now();
    const claim = (except: string[]) => {
      heldSince = now();
      return store.leases.claim({ owner: instance.id, ttlMs: instance.leaseMs, limit, scope, except, cancelled });
    };
    // A run whose end is reported here only writes that end (see LiveRun.endReported): no pass
    // of this process claims it back to run it again, however long its lease has lapsed.
    const reported = () => this.deps.liveRuns().flatMap((live) => (live.endReported ? [live.id] : []));
    const claimed = await (besideLive ? this.deps.claimBeside(claim) : claim(reported()));
    for (const run of claimed) {
      // Over a file, in claim order, as slots are free (see HeldLeftRuns).
      if (!store.shared && toResume(this.deps.mode, run.record)) {
        this.held.hold(run);
        continue;
      }
      // Still winding down here after its lease was lost (a reaper's claim): it stops before it runs again.
      const stale = this.deps.liveRuns().find((live) => live.id === run.record.id);
      if (stale) {
        stale.stop(LEASE_LOST);
        await stale.done.catch(() => {});
      }
      try {
        // Over a SQLite file no later pass tries again: recovery does, or ends the run.
        await (store.shared ? recoverRun : recoverOrEnd)(this.deps, run, report, { heldSince });
      } catch (err) {
        // Its lease expires unrenewed (it is not live here), and the next pass (or start) tries again.
        logger.error({ err, runId: run.record.id }, "could not recover a claimed run");
      }
    }
    return store.shared ? report : this.held.recover(report);
  }
}
