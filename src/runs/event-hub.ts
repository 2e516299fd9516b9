import type { StoredEvent } from "../store/events.js";
import { StringTable } from "../string-table.js";

export type EventListener = (event: StoredEvent) => void;

/** Told when a run gets its first watcher here (`true`) and loses its last (`false`). */
export type WatchObserver = (runId: string, watched: boolean) => void;

/** One subscriber of a run: its listener, how many watchers it stands for (one if not given), and what it does once the run is gone. */
interface Subscription {
  listener: EventListener;
  watchers: (() => number) | undefined;
  onGone: (() => void) | undefined;
}

/**
 * Fans a run's events out to any number of live watchers. Only events already
 * written to the database are published, so what a watcher sees can be replayed.
 */
export class EventHub {
  /** Each watched run's subscribers (a StringTable: runs come and go, see string-table.ts). */
  readonly #subscribers = new StringTable<Set<Subscription>>();
  #observer: WatchObserver | null = null;

  /** The one observer of which runs are watched (the relay of events committed elsewhere). */
  observe(observer: WatchObserver | null): void {
    this.#observer = observer;
  }

  /** Runs with at least one watcher here. */
  watchedRuns(): string[] {
    return this.#subscribers.keys();
  }

  /**
   * `watchers`: how many watchers the listener stands for (one if not given), for `watcherCount`;
   * `onGone`: called when the run is found gone (see `gone`).
   */
  subscribe(
    runId: string,
    listener: EventListener,
    { watchers, onGone }: { watchers?: () => number; onGone?: () => void } = {},
  ): () => void {
    let set = this.#subscribers.get(runId);
    const first = !set;
    if (!set) {
      set = new Set();
      this.#subscribers.set(runId, set);
    }
    const subscription: Subscription = { listener, watchers, onGone };
    set.add(subscription);
    if (first) this.#observer?.(runId, true);
    return () => {
      set.delete(subscription);
      if (set.size === 0 && this.#subscribers.get(runId) === set) {
        this.#subscribers.delete(runId);
        this.#observer?.(runId, false);
      }
    };
  }

  publish(runId: string, events: readonly StoredEvent[]): void {
    const set = this.#subscribers.get(runId);
    if (!set) return;
    for (const { listener } of [...set]) for (const event of events) listener(event);
  }

  /**
   * The run is gone (deleted with its session) and may never have published its `run.finished`
   * here: nothing more of it will be published. Its subscribers' `onGone` are called; a feed
   * then ends as for a run that has finished (what is stored, if anything, is read first).
   */
  gone(runId: string): void {
    const set = this.#subscribers.get(runId);
    if (!set) return;
    for (const { onGone } of [...set]) onGone?.();
  }

  watcherCount(runId?: string): number {
    if (runId !== undefined) return this.#count(this.#subscribers.get(runId));
    let total = 0;
    for (const set of this.#subscribers.values()) total += this.#count(set);
    return total;
  }

  #count(set: Set<Subscription> | undefined): number {
    if (set === undefined) return 0;
    let total = 0;
    for (const { watchers } of set) total += watchers?.() ?? 1;
    return total;
  }
}
