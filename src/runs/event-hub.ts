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
  #observer: WatchObserver | null = null;

  /** The one observer of which runs are watched (the relay of events committed elsewhere). */
  observe(observer: WatchObserver | null): void {
    this.#observer = observer;
  }

  /** Runs with at least one watcher here. */
  watchedRuns(): string[] {
    return [...this.#listeners.keys()];
  }

  subscribe(runId: string, listener: EventListener): () => void {
    let set = this.#listeners.get(runId);
    const first = !set;
    if (!set) {
      set = new Set();
      this.#listeners.set(runId, set);
    }
    set.add(listener);
    if (first) this.#observer?.(runId, true);
    return () => {
      set.delete(listener);
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
    if (runId !== undefined) return this.#listeners.get(runId)?.size ?? 0;
    let total = 0;
    for (const set of this.#listeners.values()) total += set.size;
    return total;
  }
}
