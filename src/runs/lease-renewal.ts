import type { Logger } from "pino";
import type { Store } from "../store/store.js";
import { LEASE_LOST, LEASE_UNRENEWED, type LiveRun } from "./live-run.js";

/** This process as an owner of runs: its id and how long a lease it takes holds. */
export interface InstanceIdentity {
  id: string;
  leaseMs: number;
}

export interface LeaseRenewalDeps {
  store: Store;
  logger: Logger;
  instance: InstanceIdentity;
  /** The runs this process executes now. */
  liveRuns: () => LiveRun[];
}

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
 * The leases of the runs this process executes over a shared database, once started: renewed
 * in one statement at each tick; a run whose lease is no longer held here is stopped (a peer
 * claimed it), and so is one not renewed in time (a renewal that fails or hangs: a peer may
 * claim it), killing its tools.
 */
export class LeaseRenewal {
  #timer: NodeJS.Timeout | null = null;
  /**
   * For each run, when the last renewal that succeeded and covered it was sent (performance.now()).
   * A renewal covers the runs it named only: one sent while a run was being set up renews nothing of it.
   */
  readonly #renewedAt = new WeakMap<LiveRun, number>();
  /** Fires at the earliest self-expiry of a run held here (see #armExpiry). */
  #expiry: NodeJS.Timeout | null = null;

  constructor(private readonly deps: LeaseRenewalDeps) {}

  /** Renews every `every` ms from now on. */
  start(every: number): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.renew(), every);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
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
   * renewal, and by itself for the runs left; never before `start`.
   */
  #armExpiry(): void {
    if (this.#expiry) clearTimeout(this.#expiry);
    this.#expiry = null;
    if (!this.#timer) return;
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
}
