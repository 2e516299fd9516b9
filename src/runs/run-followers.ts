import type { StoredEvent } from "../store/store.js";
import { StringTable } from "../string-table.js";
import type { EventHub } from "./event-hub.js";
import { MAX_HELD_BYTES } from "./held-events.js";

/** Where a feed's events go, in seq order; it never blocks, `backlogBytes` tells how much waits to be written. */
export interface FeedSink {
  /** Takes events to send (already filtered), in order; those of one turn of the event loop may leave together. */
  send(events: readonly StoredEvent[]): void;
  /**
   * Writes events (already filtered) now, after whatever `send` took: the caller joined its
   * events already. Every caught-up watcher of a run is handed the same array.
   */
  write(events: readonly StoredEvent[]): void;
  /** Bytes taken and not yet written out to the client. */
  backlogBytes(): number;
  /** Resolves once the backlog is small again (or the client went away). */
  drained(): Promise<void>;
}

/** One watcher's feed as its run's followers see it (event-feed.ts makes them). */
export interface Follower {
  /** The seq of the last event sent to its sink (or skipped as unwanted). */
  last: number;
  readonly reasoning: boolean;
  readonly sink: FeedSink;
  /** While it reads from the store: a published event, to hold until it has caught up. */
  hold(event: StoredEvent): void;
  /** Live: published events it cannot take as the others do (not right after its `last`, or its client is behind). */
  take(events: readonly StoredEvent[]): void;
  /** Live: it was sent its run's `run.finished`. */
  finished(): void;
  /** Live or reading: its run is gone (see EventHub.gone); it reads what is left stored, then ends. */
  gone(): void;
}

const wanted = (event: StoredEvent) => event.type !== "reasoning.delta";

/**
 * The followers of one run here, on one hub subscription: those reading from the store get
 * each published event to hold; those caught up (live) share what is published, joined
 * once and handed out as soon as the publish is done (a microtask) in one plain loop, the
 * same array to each (so an event is framed once). A live follower right at the first of
 * these events whose client keeps up costs a comparison and a write; any other goes
 * through its own `take`.
 */
class RunFollowers {
  readonly #readers = new Set<Follower>();
  readonly #live = new Set<Follower>();
  #pending: StoredEvent[] = [];
  #scheduled = false;
  readonly #unsubscribe: () => void;

  constructor(
    hub: EventHub,
    runId: string,
    private readonly forget: () => void,
  ) {
    this.#unsubscribe = hub.subscribe(runId, (event) => this.#published(event), {
      watchers: () => this.#readers.size + this.#live.size,
      onGone: () => this.#gone(),
    });
  }

  /** Adds a follower that reads from the store first. */
  add(follower: Follower): void {
    this.#readers.add(follower);
  }

  /** It has caught up: from the next publish on it is handed the published events with the others. */
  goLive(follower: Follower): void {
    if (this.#readers.delete(follower)) this.#live.add(follower);
  }

  /** It goes back to reading from the store (holding what is published meanwhile). */
  fallBehind(follower: Follower): void {
    if (this.#live.delete(follower)) this.#readers.add(follower);
  }

  remove(follower: Follower): void {
    this.#readers.delete(follower);
    this.#live.delete(follower);
    if (this.#readers.size === 0 && this.#live.size === 0) {
      this.#unsubscribe();
      this.#pending = [];
      this.forget();
    }
  }

  #published(event: StoredEvent): void {
    for (const reader of this.#readers) reader.hold(event);
    if (this.#live.size === 0) return;
    this.#pending.push(event);
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => this.#flush());
    }
  }

  /** What was published is handed out first; then every follower is told. */
  #gone(): void {
    this.#flush();
    for (const follower of [...this.#readers, ...this.#live]) follower.gone();
  }

  #flush(): void {
    this.#scheduled = false;
    const events = this.#pending;
    this.#pending = [];
    const first = events[0];
    if (first === undefined) return;
    const lastSeq = first.seq + events.length - 1;
    let inOrder = true;
    let finished = false;
    let plain: StoredEvent[] | null = events;
    for (let i = 0; i < events.length; i++) {
      const event = events[i] as StoredEvent;
      if (event.seq !== first.seq + i) inOrder = false;
      if (event.type === "run.finished") finished = true;
      if (!wanted(event)) plain = null;
    }
    plain ??= events.filter(wanted);
    const before = first.seq - 1;
    // Deleting the current entry while iterating a Set is safe; nothing joins during the loop.
    for (const follower of this.#live) {
      if (!inOrder || follower.last !== before || follower.sink.backlogBytes() > MAX_HELD_BYTES) {
        follower.take(events);
        continue;
      }
      follower.last = lastSeq;
      const out = follower.reasoning ? events : plain;
      if (out.length > 0) follower.sink.write(out);
      if (finished) follower.finished();
    }
  }
}

const groups = new WeakMap<EventHub, StringTable<RunFollowers>>();

/** The followers of `runId` on `hub`, made at the first and gone with the last (its subscription too). */
export function followersOf(hub: EventHub, runId: string): RunFollowers {
  let runs = groups.get(hub);
  if (runs === undefined) {
    runs = new StringTable();
    groups.set(hub, runs);
  }
  let followers = runs.get(runId);
  if (followers === undefined) {
    const group = new RunFollowers(hub, runId, () => {
      if (runs.get(runId) === group) runs.delete(runId);
    });
    followers = group;
    runs.set(runId, group);
  }
  return followers;
}

export type { RunFollowers };
