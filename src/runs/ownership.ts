import type { ClaimScope } from "../store/store.js";
import { HeldLeftRuns, type HeldLeftRunsDeps } from "./held-left-runs.js";
import { LeaseRenewal, type LeaseRenewalDeps } from "./lease-renewal.js";
import { LEASE_LOST } from "./live-run.js";
import { emptyReport, type RecoveryReport, recoverRun, settleQueues, toResume } from "./recovery.js";
import { recoverOrEnd } from "./recovery-retry.js";

export type { InstanceIdentity } from "./lease-renewal.js";

export interface OwnershipDeps extends HeldLeftRunsDeps, LeaseRenewalDeps {
  /** Sends a claim leaving alone the runs this process executes (see LiveRuns.claimBeside). */
  claimBeside<T>(claim: (executed: string[]) => Promise<T>): Promise<T>;
}

/** The most runs one claim takes, whatever the free slots (a claim is one statement). */
const MAX_CLAIM = 100;

/**
 * Ownership of runs by lease, for this process. At start it claims the runs left without an
 * owner (over a SQLite file, which no other process can open: every live run; over a shared
 * database also this instance's own, which a restart with the same INSTANCE_ID takes back at
 * once), never one this process executes already (a client may start runs before the start-up
 * claim). The runs to end are claimed whatever the free slots, those to resume as slots are
 * free: over a file the runs to resume beyond the free slots wait for one (see HeldLeftRuns),
 * and a run whose recovery fails is tried again, then ends `error` (see recoverOrEnd). Over a
 * shared database it then renews the leases of the runs it executes (see LeaseRenewal), and it
 * reaps: claims runs whose lease has expired (their instance was lost, paused or partitioned,
 * or gave them up at shutdown), and its own runs the start-up claim left for want of a slot,
 * and recovers them as start-up recovery does.
 */
export class RunOwnership {
  #reaper: NodeJS.Timeout | null = null;
  /** Stores the wall time of the runs executing here (see start). */
  #durations: NodeJS.Timeout | null = null;
  #reaping: Promise<RecoveryReport> | null = null;
  #again = false;
  /**
   * Whether runs of this instance's own may be left unclaimed, their lease unexpired: the
   * start-up claim over a shared database took as many runs to resume as it had free slots, and
   * more may wait. Until a claim of them leaves none, reaper passes take them too (beside the
   * runs executed here) as slots free, instead of a lease later.
   */
  #ownLeft = false;
  readonly #leases: LeaseRenewal;
  /** The runs the start-up claim holds for a free slot (over a SQLite file). */
  readonly held: HeldLeftRuns;

  constructor(private readonly deps: OwnershipDeps) {
    this.held = new HeldLeftRuns(deps);
    this.#leases = new LeaseRenewal(deps);
  }

  /** The claim at start (see the class); resolves with what it recovered. */
  async recoverAtStart(): Promise<RecoveryReport> {
    const report = emptyReport();
    if (this.deps.store.shared) {
      // No later pass takes the own runs to end before their lease expires: every one is claimed now.
      this.#ownLeft = await this.#claimEach("expired+own", report, { besideLive: true, drain: true });
    } else {
      // Over a file every left run is claimed now (no later pass would): those beyond the free slots are held.
      await this.#claim("all", Number.MAX_SAFE_INTEGER, report, { besideLive: true });
    }
    await settleQueues(this.deps, report);
    const { resumed, aborted, started, requeuedInputs, held } = report;
    if (resumed.length || aborted.length || started.length || requeuedInputs || held.length)
      this.deps.logger.info(report, "settled runs left by a previous process");
    return report;
  }

  /**
   * Starts storing the wall time of the runs executing here every third of the lease's TTL, for
   * those whose stored one lags by half that or more (so a crash loses at most about half the
   * TTL of it: see LiveRun.saveDuration), and, over a shared database, renewing (every third of
   * the TTL) and reaping.
   */
  start(): void {
    if (this.#durations) return;
    const { leaseMs } = this.deps.instance;
    const every = Math.max(1, Math.floor(leaseMs / 3));
    this.#durations = setInterval(() => {
      for (const run of this.deps.liveRuns()) run.saveDuration(every / 2);
    }, every);
    this.#durations.unref();
    if (!this.deps.store.shared || this.#reaper) return;
    this.#leases.start(every);
    this.#reaper = setInterval(() => void this.reap(), Math.max(1, Math.min(1000, every)));
    this.#reaper.unref();
  }

  stop(): void {
    if (this.#durations) clearInterval(this.#durations);
    this.#durations = null;
    if (this.#reaper) clearInterval(this.#reaper);
    this.#reaper = null;
    this.#leases.stop();
  }

  /** One renewal of every lease held here (see LeaseRenewal.renew). */
  renew(): Promise<void> {
    return this.#leases.renew();
  }

  /**
   * One reaper pass (a pass asked for while one runs is done right after it); none once shutdown
   * began. It claims as #claimEach does (a cancel answered 202 is thus followed by its
   * `run.finished` while every instance is at MAX_CONCURRENT_RUNS) the runs whose lease expired,
   * and while the start-up claim may have left some (see #ownLeft), this instance's own too.
   */
  reap(): Promise<RecoveryReport> {
    if (this.#reaping) {
      this.#again = true;
      return this.#reaping;
    }
    this.#reaping = (async () => {
      const report = emptyReport();
      const failed = (err: unknown) => this.deps.logger.warn({ err }, "the reaper could not claim runs; trying again");
      do {
        this.#again = false;
        if (!this.deps.manager.accepting) break;
        const own = this.#ownLeft;
        const more = await this.#claimEach(own ? "expired+own" : "expired", report, { besideLive: own, failed });
        if (own && !more) this.#ownLeft = false;
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
   * The claims of a pass over `scope`, into `report`. First the runs it would end (see toResume:
   * those with a cancel requested, or every run with ON_RESTART=abort), whatever the free slots:
   * ending one `aborted` executes nothing and takes no slot (as a DELETE of a run held for a
   * slot over a SQLite file ends it at once: see HeldLeftRuns.cancel); MAX_CLAIM of them, or
   * with `drain` MAX_CLAIM at a time until none is left (or a claim ended none of its runs).
   * Then those to resume, up to the free slots (the runs claimed to end never count against
   * them). A claim that fails is told to `failed` (without it, it rejects). Resolves with
   * whether runs in `scope` may be left: the last claim took as many as it could, or failed.
   */
  async #claimEach(
    scope: ClaimScope,
    report: RecoveryReport,
    { besideLive, drain = false, failed }: { besideLive: boolean; drain?: boolean; failed?: (err: unknown) => void },
  ): Promise<boolean> {
    let more = false;
    for (const cancelled of this.deps.mode === "resume" ? [true, false] : [undefined]) {
      const toEnd = cancelled !== false;
      let ended: number;
      do {
        ended = report.aborted.length;
        const limit = toEnd ? MAX_CLAIM : Math.min(MAX_CLAIM, this.deps.freeSlots());
        const claim = this.#claim(scope, limit, report, { besideLive, cancelled });
        const claimed = failed
          ? await claim.catch((err) => {
              failed(err);
              return limit;
            })
          : await claim;
        more = claimed >= limit;
        // A drain goes on while it ends runs (a run whose recovery fails would be claimed again).
      } while (drain && toEnd && more && report.aborted.length > ended);
    }
    return more;
  }

  /**
   * Claims up to `limit` runs in `scope` and recovers them into `report`; resolves with how many
   * it claimed. `besideLive`: the runs this process executes are left alone (else only their
   * expiry keeps them); `cancelled`: see RunClaimQuery.
   */
  async #claim(
    scope: ClaimScope,
    limit: number,
    report: RecoveryReport,
    { besideLive = false, cancelled }: { besideLive?: boolean; cancelled?: boolean } = {},
  ): Promise<number> {
    if (limit <= 0) return 0;
    const { store, instance, logger } = this.deps;
    // The leases run from before their claim was sent, however long recovering each one takes.
    let heldSince = performance.now();
    const claim = (except: string[]) => {
      heldSince = performance.now();
      return store.leases.claim({ owner: instance.id, ttlMs: instance.leaseMs, limit, scope, except, cancelled });
    };
    // A run whose end is reported here only writes that end (see LiveRun.endReported): no pass
    // of this process claims it back to run it again, however long its lease has lapsed.
    const reported = () => this.deps.liveRuns().flatMap((live) => (live.endReported ? [live.id] : []));
    const claimed = await (besideLive ? this.deps.claimBeside(claim) : claim(reported()));
    for (const run of claimed) {
      // Over a file, in claim order, as slots are free (see HeldLeftRuns).
      if (!store.shared && toResume(this.deps.mode, run.record)) {
        await this.held.hold(run, report);
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
    if (!store.shared) await this.held.recover(report);
    return claimed.length;
  }
}
