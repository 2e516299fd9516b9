import type { StoredEvent } from "../store/events.js";

export type EventListener = (event: StoredEvent) => void;

/**
 * Fans a run's events out to any number of live watchers. Only events already
 * written to the database are published, so what a watcher sees can be replayed.
 */
export class EventHub {
  readonly #listeners = new Map<string, Set<EventListener>>();

  subscribe(runId: string, listener: EventListener): () => void {
    let set = this.#listeners.get(runId);
    if (!set) {
      set = new Set();
      this.#listeners.set(runId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#listeners.get(runId) === set) this.#listeners.delete(runId);
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
