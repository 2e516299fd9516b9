import type { LiveRun } from "./live-run.js";

/**
 * The runs this process executes, by id, and the slots reserved for runs being admitted.
 * A cache of what the database says is live here: it never decides whether a session is
 * busy (the database does), only how many runs this process takes on.
 */
export class LiveRuns {
  readonly #runs = new Map<string, LiveRun>();
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
  }

  remove(live: LiveRun): void {
    if (this.#runs.get(live.id) !== live) return;
    this.#runs.delete(live.id);
    this.onFreed();
  }
}
