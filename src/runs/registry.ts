import type { RunView } from "../domain/run.js";
import type { LiveRun } from "./live-run.js";

/**
 * The runs this process executes, by id, and the slots reserved for runs being admitted.
 * A cache of what the database says is live here: it never decides whether a session is
 * busy (the database does), only how many runs this process takes on.
 */
export class LiveRuns {
  readonly #runs = new Map<string, LiveRun>();
  /** Who waits for a run to be executed here (see whenLive), by run id. */
  readonly #awaited = new Map<string, Set<(live: LiveRun) => void>>();
  /** Slots taken by admissions still writing their run. */
  #reserved = 0;

  /** `onFreed` is called (synchronously) each time a slot is given back: a run removed, a reservation released. */
  constructor(private readonly onFreed: () => void = () => {}) {}

  get size(): number {
    return this.#runs.size + this.#reserved;
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
    return [...this.#runs.values()];
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
        this.onFreed();
      },
    };
  }

  add(live: LiveRun): void {
    this.#runs.set(live.id, live);
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

  remove(live: LiveRun): void {
    if (this.#runs.get(live.id) !== live) return;
    this.#runs.delete(live.id);
    this.onFreed();
  }
}
