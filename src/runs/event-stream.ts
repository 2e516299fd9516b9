import type { StoredEvent } from "../store/events.js";
import type { Store } from "../store/store.js";
import type { EventHub } from "./event-hub.js";

export interface SseFrame {
  id: string;
  event: string;
  data: string;
}

/** Stored events read per query while replaying. */
const BACKLOG_PAGE = 500;

const frame = (event: StoredEvent): SseFrame => ({ id: String(event.seq), event: event.type, data: event.data });

/**
 * A run's events after `after`: the stored backlog, then live ones, without a gap or
 * a duplicate at the seam, ending after `run.finished`. Subscribing happens before
 * the backlog is read (both synchronous), and live events the backlog already
 * held are dropped. The stream ends when the run has finished, even if the client had
 * already seen `run.finished` (or resumed past it). `closed` ends it early (the client went away).
 */
export async function* runEventStream({
  store,
  hub,
  runId,
  after,
  closed,
}: {
  store: Store;
  hub: EventHub;
  runId: string;
  after: number;
  closed: AbortSignal;
}): AsyncGenerator<SseFrame> {
  const queue: StoredEvent[] = [];
  let wake: (() => void) | null = null;
  const unsubscribe = hub.subscribe(runId, (event) => {
    queue.push(event);
    wake?.();
  });
  const onClose = () => wake?.();
  closed.addEventListener("abort", onClose);
  try {
    let last = after;
    // The backlog is read a page at a time; live events wait in the queue meanwhile.
    let backlog = store.events.after(runId, after, BACKLOG_PAGE);
    let backlogDone = backlog.length < BACKLOG_PAGE;
    const finishedBefore = store.runs.get(runId)?.status === "finished";
    let next = 0;
    while (!closed.aborted) {
      if (next === backlog.length && !backlogDone) {
        backlog = store.events.after(runId, last, BACKLOG_PAGE);
        backlogDone = backlog.length < BACKLOG_PAGE;
        next = 0;
        continue;
      }
      const event = next < backlog.length ? backlog[next++] : queue.shift();
      if (event) {
        // Already sent (or before the resume point): skipped, but the run's end still ends
        // the stream, also for a client that resumed at or past the last event.
        if (event.seq <= last) {
          if (event.type === "run.finished") return;
          continue;
        }
        last = event.seq;
        yield frame(event);
        if (event.type === "run.finished") return;
        continue;
      }
      // The run ended before this stream began and everything after `after` was sent.
      if (finishedBefore) return;
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
