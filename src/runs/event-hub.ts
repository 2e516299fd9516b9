import type { StoredEvent } from "../store/events.js";

export type EventListener = (event: StoredEvent) => void;

/** Told when a run gets its first watcher here (`true`) and loses its last (`false`). */
export type WatchObserver = (runId: string, watched: boolean) => void;

/**
 * Fans a run's events out to any number of live watchers. Only events already
 * written to the database are published, so what a watcher sees can be replayed.
 */
export class EventHub {
  readonly #listeners = new Map<string, Set<EventListener>>();
  /** Listeners that stand for several watchers (a run's followers), and how many. */
  readonly #weights = new Map<EventListener, () => number>();
  #observer: WatchObserver | null = null;

  /** The one observer of which runs are watched (the relay of events committed elsewhere). */
  observe(observer: WatchObserver | null): void {
    this.#observer = observer;
  }

  /** Runs with at least one watcher here. */
  watchedRuns(): string[] {
    return [...this.#listeners.keys()];
  }

  /** `watchers`: how many watchers the listener stands for (one if not given), for `watcherCount`. */
  subscribe(runId: string, listener: EventListener, { watchers }: { watchers?: () => number } = {}): () => void {
    let set = this.#listeners.get(runId);
    const first = !set;
    if (!set) {
      set = new Set();
      this.#listeners.set(runId, set);
    }
    set.add(listener);
    if (watchers) this.#weights.set(listener, watchers);
    if (first) this.#observer?.(runId, true);
    return () => {
      set.delete(listener);
      this.#weights.delete(listener);
      if (set.size === 0 && this.#listeners.get(runId) === set) {
        this.#listeners.delete(runId);
        this.#observer?.(runId, false);
      }
    };
  }

  publish(runId: string, events: readonly StoredEvent[]): void {
    const set = this.#listeners.get(runId);
    if (!set) return;
    for (const listener of [...set]) for (const event of events) listener(event);
  }

  watcherCount(runId?: string): number {
    if (runId !== undefined) return this.#count(this.#listeners.get(runId));
    let total = 0;
    for (const set of this.#listeners.values()) total += this.#count(set);
    return total;
  }

  #count(set: Set<EventListener> | undefined): number {
    if (set === undefined) return 0;
    if (this.#weights.size === 0) return set.size;
    let total = 0;
    for (const listener of set) total += this.#weights.get(listener)?.() ?? 1;
    return total;
  }
}
