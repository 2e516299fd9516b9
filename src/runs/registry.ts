import type { RunView } from "../domain/run.js";
import { StringTable } from "../string-table.js";
import type { LiveRun } from "./live-run.js";

/**
 * The slot of a run executed here, handed to the start that takes the run's place (see
 * LiveRuns.handOver): once the run has left, the slot is kept for that start alone, neither
 * given back (no queued run, no run held for a slot takes it) nor left to a start of another
 * session.
 */
export interface SlotHandover {
  /**
   * The slot, as a reservation (see LiveRuns.reserve), once the run has left it; null while the
   * run is still registered (the handover is then withdrawn: its end frees the slot as any does)
   * and once taken or released.
   */
  take(): { release: () => void } | null;
  /** Gives back a slot kept and not taken (or withdraws the handover of a run still registered). */
  release(): void;
}

/** A handover that hands over nothing: its start takes a free slot, if any, as any start does. */
const NO_HANDOVER: SlotHandover = { take: () => null, release: () => {} };

/**
 * The runs this process executes, by id, and the slots reserved for runs being admitted.
 * A cache of what the database says is live here: it never decides whether a session is
 * busy (the database does), only how many runs this process takes on.
 */
export class LiveRuns {
  readonly #runs = new StringTable<LiveRun>();
  /**
   * Runs a start here has stored and not registered yet (see startNow), each with who cancelled
   * it meanwhile, if one did (a DELETE): it found no live run to stop, so registration stops it.
   */
  readonly #starting = new StringTable<{ cancelledBy: string | null }>();
  /** Who waits for a run to be executed here (see whenLive), by run id. */
  readonly #awaited = new StringTable<Set<(live: LiveRun) => void>>();
  /** Slots taken by admissions still writing their run. */
  #reserved = 0;
  /** The handovers of runs still registered here (see handOver): each one's state, `kept` once its run left. */
  readonly #handovers = new Map<LiveRun, { kept: boolean }>();
  /** Slots of runs that have left, kept for the starts they were handed over to (see handOver). */
  #kept = 0;
  /** The claim under way (see claimBeside), settled once answered; null when none is. */
  #claiming: Promise<unknown> | null = null;
  /** Called once no slot is reserved (see claimBeside). */
  #unreserved: (() => void) | null = null;

  /** `onFreed` is called (synchronously) each time a slot is given back: a run removed, a reservation released. */
  constructor(private readonly onFreed: () => void = () => {}) {}

  /**
   * Slots taken (what admission counts): runs registered here, those reserved by starts still
   * writing theirs, and those kept for starts taking the place of runs that left (see handOver).
   */
  get size(): number {
    return this.#runs.size + this.#reserved + this.#kept;
  }

  /** How many runs this process executes now: the registered ones only, no reserved slot. */
  get executing(): number {
    return this.#runs.size;
  }

  /**
   * The tool calls the runs executed here wait on a decision for now, read from their approval
   * waiters: a call counts from the moment its run waits for it (its request being written, or
   * asked again by a run resumed here) until its decision (a person's, the ledger's, the
   * timeout's denial) is written, or its run no longer waits (cancelled, out of wall time,
   * stopped, given up to another instance), or no longer executes here.
   */
  approvalsPending(): number {
    let pending = 0;
    for (const live of this.#runs.values()) pending += live.waiters.size;
    return pending;
  }

  get(runId: string): LiveRun | undefined {
    return this.#runs.get(runId);
  }

  /**
   * The view of a run whose end is decided here and being written, as reads of it show it
   * before it is stored: `decided`, from the moment it is decided; otherwise once reported.
   */
  ending(runId: string, { decided = false }: { decided?: boolean } = {}): RunView | undefined {
    const phase = this.#runs.get(runId)?.phase;
    return phase?.name === "ending" && (decided || phase.reported) ? phase.view : undefined;
  }

  values(): LiveRun[] {
    return this.#runs.values();
  }

  /** Takes a slot at once (before any await), so concurrent admissions respect the limits. */
  reserve(): { release: () => void } {
    this.#reserved++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#reserved--;
        if (this.#reserved === 0) this.#unreserved?.();
        this.onFreed();
      },
    };
  }

  /**
   * Hands `live`'s slot to a start that takes its place (an interrupting start): when the run
   * leaves, its slot is kept (no `onFreed`) until the start takes it or releases the handover,
   * which the start does whatever its outcome. A run already handed over (or no longer
   * registered) hands over nothing more.
   */
  handOver(live: LiveRun): SlotHandover {
    if (this.#runs.get(live.id) !== live || this.#handovers.has(live)) return NO_HANDOVER;
    const state = { kept: false };
    this.#handovers.set(live, state);
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      if (this.#handovers.get(live) === state) this.#handovers.delete(live);
      return true;
    };
    return {
      take: () => {
        if (!settle() || !state.kept) return null;
        // Kept to reserved: the count of slots taken does not change, nothing is freed.
        this.#kept--;
        return this.reserve();
      },
      release: () => {
        if (!settle() || !state.kept) return;
        this.#kept--;
        this.onFreed();
      },
    };
  }

  /**
   * Resolves once a start here may take a run's lease: at once (null) unless a claim is under way
   * (see claimBeside). A start awaits it before it reserves its slot.
   */
  claimed(): Promise<void> | null {
    if (!this.#claiming) return null;
    return (async () => {
      while (this.#claiming) await this.#claiming.catch(() => {});
    })();
  }

  /**
   * Sends `claim` with the ids of the runs executed here, so that it leaves them alone: once
   * no start here is between taking a run's lease and registering it (every such start holds
   * a reserved slot from before its write), while new starts wait for the claim (`claimed`).
   * A start given up before it registered its run is not executed here: the claim may take it.
   */
  async claimBeside<T>(claim: (executed: string[]) => Promise<T>): Promise<T> {
    await this.claimed();
    const answered = (async () => {
      if (this.#reserved > 0) await new Promise<void>((resolve) => (this.#unreserved = resolve));
      this.#unreserved = null;
      return claim(this.#runs.values().map((live) => live.id));
    })();
    this.#claiming = answered;
    try {
      return await answered;
    } finally {
      if (this.#claiming === answered) this.#claiming = null;
    }
  }

  /** A start here stored `runId`: it is registered (`add`) or given up (`abandonStart`) next. */
  starting(runId: string): void {
    this.#starting.set(runId, { cancelledBy: null });
  }

  abandonStart(runId: string): void {
    this.#starting.delete(runId);
  }

  isStarting(runId: string): boolean {
    return this.#starting.has(runId);
  }

  /** A cancel for `runId` (`by` whom), not live here: kept for its registration if a start here stored it. */
  cancelStarting(runId: string, by: string): void {
    const start = this.#starting.get(runId);
    if (start) start.cancelledBy ??= by;
  }

  add(live: LiveRun): void {
    this.#runs.set(live.id, live);
    const start = this.#starting.get(live.id);
    this.#starting.delete(live.id);
    // Stopped before it runs anything: its loop sees the signal first.
    if (start?.cancelledBy) live.cancel(start.cancelledBy);
    const waiting = this.#awaited.get(live.id);
    if (waiting === undefined) return;
    this.#awaited.delete(live.id);
    for (const resolve of waiting) resolve(live);
  }

  /**
   * `live` resolves with the run once this process executes it (at once if it does); it never
   * rejects, and stays pending for a run executed elsewhere. `cancel` stops the wait.
   */
  whenLive(runId: string): { live: Promise<LiveRun>; cancel(): void } {
    const now = this.#runs.get(runId);
    if (now) return { live: Promise.resolve(now), cancel: () => {} };
    let resolve!: (live: LiveRun) => void;
    const live = new Promise<LiveRun>((r) => {
      resolve = r;
    });
    let waiting = this.#awaited.get(runId);
    if (waiting === undefined) {
      waiting = new Set();
      this.#awaited.set(runId, waiting);
    }
    waiting.add(resolve);
    return {
      live,
      cancel: () => {
        const set = this.#awaited.get(runId);
        if (!set?.delete(resolve) || set.size > 0) return;
        this.#awaited.delete(runId);
      },
    };
  }

  /** `live` no longer executes here: its slot is given back, or kept for the start it was handed over to. */
  remove(live: LiveRun): void {
    if (this.#runs.get(live.id) !== live) return;
    this.#runs.delete(live.id);
    const handover = this.#handovers.get(live);
    if (handover) {
      this.#handovers.delete(live);
      handover.kept = true;
      this.#kept++;
      return;
    }
    this.onFreed();
  }
}
