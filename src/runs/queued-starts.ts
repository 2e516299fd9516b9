import type { Logger } from "pino";
import { isConflict } from "../store/errors.js";
import type { LeaseTerms } from "../store/store.js";
import type { EventHub } from "./event-hub.js";
import { BY_DELETE, LiveRun } from "./live-run.js";
import { startQueuedRun } from "./queue.js";
import type { LiveRuns } from "./registry.js";

export interface QueuedStartsDeps {
  store: Parameters<typeof startQueuedRun>[0]["store"];
  hub: EventHub;
  /** The lease a run started here is held under. */
  lease: LeaseTerms;
  /** The runs of this process: a start holds one of its slots until its run is registered. */
  registry: LiveRuns;
  /** Whether this process may take on one more run now (MAX_CONCURRENT_RUNS). */
  hasRoom: () => boolean;
  /** Active runs one owner (API key) may have, on every instance (MAX_RUNS_PER_KEY); 0 or absent: no such limit. */
  maxRunsPerKey?: number;
  /** Launches the run here; resolves once its input is committed (or it ended first). */
  execute: (live: LiveRun) => Promise<void>;
  /** A pass over every session's queue (see startQueues), run once room comes back. */
  startWaiting: () => Promise<unknown>;
  logger: Logger;
}

/**
 * The starts of queued runs in this process, within MAX_CONCURRENT_RUNS and within its key's
 * MAX_RUNS_PER_KEY (the store counts the key's active runs, every instance's). With no room
 * here a queued run stays queued, and the next slot given back here (`slotFreed`) starts a
 * pass over the queues; with none for its key it stays queued too, and the next run ending
 * here (`runEnded`) starts that pass. (Over a shared database, a key's run ending on another
 * instance is followed by the reapers' passes over the queues, about once a second.)
 */
export class QueuedStarts {
  #waitingForRoom = false;
  #waitingForKey = false;
  /** Runs ended here so far (see runEnded): a start refused for its key tells whether one ended meanwhile. */
  #runsEnded = 0;

  constructor(private readonly deps: QueuedStartsDeps) {}

  /**
   * Starts the session's oldest queued run if the session has no active run and its key is
   * under its limit (the store decides) and there is room here, and executes it here;
   * resolves once its input is committed. Null when none started.
   */
  async start(sessionId: string): Promise<LiveRun | null> {
    const live = await this.#start(sessionId);
    // None started while this process is full (whatever the reason this time: the queue emptied
    // meanwhile, the session busy): a pass stops here, so the next slot given back starts one.
    if (!live && !this.deps.hasRoom()) this.#waitingForRoom = true;
    return live;
  }

  async #start(sessionId: string): Promise<LiveRun | null> {
    const { deps } = this;
    // Most runs end with nothing queued behind them: a read says so, without a slot or a write.
    if (!(await deps.store.runs.anyQueued(sessionId))) return null;
    // The run's lease is taken after a claim under way, which leaves alone only the runs executed here.
    const claim = deps.registry.claimed();
    if (claim) await claim;
    if (!deps.hasRoom()) {
      this.#waitingForRoom = true;
      return null;
    }
    // Held from here to the run's registration, so that starts at once stay within the limit.
    const slot = deps.registry.reserve();
    const heldSince = performance.now();
    const endedBefore = this.#runsEnded;
    const started = await startQueuedRun(deps, sessionId).catch((err: unknown) => {
      slot.release();
      if (!isConflict(err, "owner_runs")) throw err;
      // The key is at its limit: the queue waits for one of its runs to end (not for a slot:
      // this release, and the others of a pass, would start the pass again at once); one that
      // ended while the refusal was on its way is not waited for.
      if (this.#runsEnded !== endedBefore) this.#startWaiting();
      else this.#waitingForKey = true;
      return null;
    });
    if (!started) {
      slot.release();
      return null;
    }
    const live = new LiveRun(started.record, started.session, started.recorder, heldSince);
    const executing = deps.execute(live);
    slot.release();
    // A DELETE that came between the start and the run's registration here wrote only its request.
    const access = await deps.store.runs.access(live.id);
    if (access?.status === "cancelling") live.cancel(access.cancelledBy ?? BY_DELETE);
    await executing;
    return live;
  }

  /** A slot was given back here (a run ended, a reservation was released): queues that waited for room go on. */
  slotFreed(): void {
    if (!this.#waitingForRoom) return;
    this.#waitingForRoom = false;
    this.#startWaiting();
  }

  /** A run executed here has finished: its key may have room again, so queues that waited for their key's go on. */
  runEnded(): void {
    this.#runsEnded++;
    if (!this.#waitingForKey) return;
    this.#waitingForKey = false;
    this.#startWaiting();
  }

  #startWaiting(): void {
    this.deps
      .startWaiting()
      .catch((err) => this.deps.logger.error({ err }, "could not start the queued runs waiting for room"));
  }
}
