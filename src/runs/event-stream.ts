import type { Store, StoredEvent } from "../store/store.js";
import type { AdmissionWatch } from "./admission-watch.js";
import type { EventHub } from "./event-hub.js";
import { HeldEvents, MAX_HELD_BYTES } from "./held-events.js";

export interface SseFrame {
  id: string;
  event: string;
  data: string;
}

/** Stored events read per query while replaying: at most 500, and at most MAX_HELD_BYTES of them (at least one). */
const BACKLOG_PAGE = { limit: 500, bytes: MAX_HELD_BYTES };

/** Which of a run's events a watcher is sent: those after `after`, until `closed` aborts. */
export interface RunEventsQuery {
  store: Store;
  hub: EventHub;
  runId: string;
  after: number;
  closed: AbortSignal;
  /** Include `reasoning.delta` events (a client asked with `?reasoning=true`); skipped otherwise. */
  reasoning?: boolean;
  /**
   * Whether the stored run had finished when the caller read it, before the stream began (a
   * finished run publishes nothing more, so a read that stops short of its `run.finished`
   * ends the stream); read from the store when not given. Not a view of a run still ending
   * here, which says finished before its end is stored.
   */
  finished?: boolean;
  /** Leave out the stored events of user messages, unread (a chat stream shows none); live ones are sent. */
  withoutUserMessages?: boolean;
  /**
   * A watch that saw the run admitted (with `after` 0): the stream begins with what it holds,
   * as if published since it subscribed, and reads the store only at a gap.
   */
  admission?: AdmissionWatch;
}

const frame = (event: StoredEvent): SseFrame => ({ id: String(event.seq), event: event.type, data: event.data });

/**
 * A run's events after `after`: the stored backlog, then live ones, ending after
 * `run.finished`. It subscribes before reading anything, holds live events while it reads
 * (every read is awaited), and goes live once a page comes back short. Live events it has
 * already sent are dropped; one that skips a seq (a gap: an event lost between the read
 * and the switch, or dropped because the watcher fell behind, see MAX_HELD_EVENTS) sends it
 * back to the database, which holds every published event, until it has caught up. The
 * stream ends when the run has finished, even if the client had already seen
 * `run.finished` (or resumed past it). `closed` ends it early (the client went away).
 * `reasoning.delta` events are left out unless `reasoning` is set, so a client that did not
 * ask sees their seqs skipped.
 */
export async function* runEventStream({
  store,
  hub,
  runId,
  after,
  closed,
  reasoning = false,
  finished,
  withoutUserMessages = false,
  admission,
}: RunEventsQuery): AsyncGenerator<SseFrame> {
  /** Live events; once it overflowed (too many were held), the stream reads on from the database. */
  const held = new HeldEvents();
  let wake: (() => void) | null = null;
  /** `run.finished` was published: once everything stored is read and nothing is held, the stream is over. */
  let finishedSeen = false;
  const unsubscribe = hub.subscribe(
    runId,
    (event) => {
      if (event.type === "run.finished") finishedSeen = true;
      // A client not keeping up overflows it: what is held is dropped, and read on from the database.
      held.hold(event);
      wake?.();
    },
    {
      // Gone (deleted with its session): as for a run whose end was published, what is stored is read, and the stream ends.
      onGone: () => {
        finishedSeen = true;
        wake?.();
      },
    },
  );
  // Taken once subscribed: together with what is published from now on, every event of the run.
  const admitted = after === 0 ? (admission?.take(runId) ?? null) : null;
  for (const event of admitted ?? []) {
    if (event.type === "run.finished") finishedSeen = true;
    held.hold(event);
  }
  const onClose = () => wake?.();
  closed.addEventListener("abort", onClose);
  try {
    let last = after;
    // A run that is gone (deleted with its session) publishes nothing more either.
    const finishedBefore = finished ?? ((await store.runs.access(runId))?.status ?? "finished") === "finished";
    let reading = !admitted?.length;
    /** The run's end was seen but not sent: one more read makes sure nothing stored is left. */
    let confirmed = false;
    while (!closed.aborted) {
      if (reading) {
        const { events: page, more } = await store.events.afterWithin(runId, last, {
          ...BACKLOG_PAGE,
          withoutUserMessages,
        });
        for (const event of page) {
          last = event.seq;
          if (event.type === "reasoning.delta" && !reasoning) continue;
          yield frame(event);
          if (event.type === "run.finished") return;
          if (closed.aborted) return;
        }
        if (more) continue;
        // Held from here on again. What was dropped while the page was sent (a slow client: what
        // was held overflowed) is read now, not when a later event would show the gap (a run
        // that then waits, for an approval say, publishes none).
        const wasOverflowed = held.overflowed;
        held.resume();
        reading = wasOverflowed;
        continue;
      }
      const event = held.shift();
      if (event) {
        // Already sent (or before the resume point): skipped, but the run's end still ends
        // the stream, also for a client that resumed at or past the last event.
        if (event.seq <= last) {
          if (event.type === "run.finished") return;
          continue;
        }
        if (event.seq > last + 1) {
          // A gap: what is missing is stored; read it (and what follows) from the database.
          reading = true;
          continue;
        }
        last = event.seq;
        if (event.type === "reasoning.delta" && !reasoning) continue;
        yield frame(event);
        if (event.type === "run.finished") return;
        continue;
      }
      if (held.overflowed) {
        reading = true;
        continue;
      }
      // The run has ended (before this stream began, or since: its `run.finished` was then
      // sent or skipped as already seen), and everything stored after `last` was read.
      if (finishedBefore || finishedSeen) {
        if (confirmed) return;
        confirmed = true;
        reading = true;
        continue;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = null;
    }
  } finally {
    closed.removeEventListener("abort", onClose);
    unsubscribe();
  }
}
