import type { Logger } from "pino";
import type { RunNotifications, Store } from "../store/store.js";
import { StringTable } from "../string-table.js";
import type { EventHub } from "./event-hub.js";
import { MAX_HELD_BYTES } from "./held-events.js";
import { startWakePoll } from "./wake-poll.js";

/**
 * Stored events read per query: at most 500, and only as many as fit in MAX_HELD_BYTES (at
 * least one), so a run's burst of large events (1 MB inputs) is not read, nor held, whole.
 */
const PAGE = { limit: 500, bytes: MAX_HELD_BYTES };

export interface EventRelayDeps {
  store: Store;
  hub: EventHub;
  notifications: RunNotifications;
  /** Whether this process executes the run (its recorder publishes its events itself). */
  isLocal: (runId: string) => boolean;
  logger: Logger;
  /** Poll intervals (see startWakePoll). */
  downPollMs?: number;
  safetyPollMs?: number;
}

interface Relayed {
  /** The last seq published from the database; null until the first read. */
  cursor: number | null;
  reading: boolean;
  /** Another read was asked for while one ran. */
  again: boolean;
}

/**
 * Publishes into this process's EventHub the events of runs watched here but executed by
 * another instance: a notification (or the poll) says a run has new events, and one reader
 * per run reads them from the database after the last seq it published. The first read of a
 * run publishes its last stored event again: a watcher that missed what was committed while
 * it subscribed sees a gap there and reads it from the database (the event stream heals
 * gaps and drops what it has sent), so nothing is lost and nothing is sent twice. A run a
 * read finds gone (deleted with its session) is announced to its watchers as gone.
 */
export class EventRelay {
  readonly #runs = new StringTable<Relayed>();
  #stops: (() => void)[] = [];

  constructor(private readonly deps: EventRelayDeps) {}

  start(): void {
    const { hub, notifications } = this.deps;
    hub.observe((runId, watched) => (watched ? this.#watch(runId) : this.#runs.delete(runId)));
    for (const runId of hub.watchedRuns()) this.#watch(runId);
    this.#stops = [
      notifications.subscribe({
        events: (runId, seq) => this.#notified(runId, seq),
        resync: () => this.#readAll(),
      }),
      startWakePoll({
        notifications,
        poll: async () => this.#readAll(),
        downMs: this.deps.downPollMs,
        safetyMs: this.deps.safetyPollMs,
      }),
      () => hub.observe(null),
    ];
  }

  stop(): void {
    for (const stop of this.#stops.splice(0)) stop();
    this.#runs.clear();
  }

  /**
   * This process stopped executing `runId` without storing its end (its lease lost or
   * unrenewed, a write's outcome unknown, a shutdown): the notifications of what the instance
   * that took it over committed meanwhile were skipped while it executed here, and none may
   * follow (that instance may have finished it), so the run's watchers here are caught up now.
   */
  left(runId: string): void {
    if (this.#runs.has(runId)) void this.#read(runId);
  }

  #watch(runId: string): void {
    if (!this.#runs.has(runId)) this.#runs.set(runId, { cursor: null, reading: false, again: false });
    void this.#read(runId);
  }

  #notified(runId: string, seq: number): void {
    const relayed = this.#runs.get(runId);
    if (!relayed || (relayed.cursor !== null && seq <= relayed.cursor)) return;
    void this.#read(runId);
  }

  #readAll(): void {
    for (const runId of this.#runs.keys()) void this.#read(runId);
  }

  async #read(runId: string): Promise<void> {
    const relayed = this.#runs.get(runId);
    if (!relayed) return;
    if (relayed.reading) {
      relayed.again = true;
      return;
    }
    relayed.reading = true;
    try {
      do {
        relayed.again = false;
        // Executed here: its recorder publishes; a later read starts over from the last event.
        if (this.deps.isLocal(runId)) {
          relayed.cursor = null;
          continue;
        }
        await this.#catchUp(runId, relayed);
      } while (relayed.again && this.#runs.get(runId) === relayed);
    } catch (err) {
      // Read again at the next notification or poll.
      this.deps.logger.warn({ err, runId }, "could not read the events of a run executed elsewhere");
    } finally {
      relayed.reading = false;
    }
  }

  async #catchUp(runId: string, relayed: Relayed): Promise<void> {
    const { store, hub } = this.deps;
    if (relayed.cursor === null) relayed.cursor = Math.max(0, (await store.events.lastSeq(runId)) - 1);
    for (;;) {
      const { events: page, more } = await store.events.afterWithin(runId, relayed.cursor, PAGE);
      if (this.#runs.get(runId) !== relayed || this.deps.isLocal(runId)) return;
      const last = page.at(-1);
      if (!last) return this.#goneUnlessStored(runId, relayed);
      relayed.cursor = last.seq;
      hub.publish(runId, page);
      if (!more) return;
    }
  }

  /**
   * A read found nothing new: a run deleted with its session (by another instance, its
   * `run.finished` maybe deleted before it was read here) has nothing more to publish, and its
   * watchers here are told so (EventHub.gone). Only a read that found nothing asks the store:
   * one announced by a notification and found deleted, a first read, or a poll's.
   */
  async #goneUnlessStored(runId: string, relayed: Relayed): Promise<void> {
    const stored = await this.deps.store.runs.access(runId);
    if (stored !== null || this.#runs.get(runId) !== relayed || this.deps.isLocal(runId)) return;
    this.deps.hub.gone(runId);
  }
}

/**
 * Resolves once a run executed elsewhere has finished: its `run.finished` event reaches this
 * process's hub (through the relay), or the database says so already; or once the run is gone
 * (deleted with its session: the database finds no run, or the relay says so): it is over, and
 * the caller finds it gone; or once `signal` aborts (whoever waited no longer does), its
 * subscription gone with it.
 */
export async function waitForRelayedEnd({
  store,
  hub,
  runId,
  signal,
}: {
  store: Store;
  hub: EventHub;
  runId: string;
  signal?: AbortSignal;
}): Promise<void> {
  if (signal?.aborted) return;
  let ended!: () => void;
  const finished = new Promise<void>((resolve) => {
    ended = resolve;
  });
  const unsubscribe = hub.subscribe(
    runId,
    (event) => {
      if (event.type === "run.finished") ended();
    },
    { onGone: ended },
  );
  signal?.addEventListener("abort", ended, { once: true });
  try {
    if (((await store.runs.access(runId))?.status ?? "finished") === "finished") return;
    await finished;
  } finally {
    signal?.removeEventListener("abort", ended);
    unsubscribe();
  }
}
