import type { StoredEvent } from "../store/store.js";
import { MAX_HELD_BYTES, MAX_HELD_EVENTS, type RunEventsQuery } from "./event-stream.js";

/** Stored events read per query while replaying. */
const BACKLOG_PAGE = 500;

/** Where a feed's events go, in seq order; `send` never blocks, `backlog` tells how much waits to be written. */
export interface FeedSink {
  /** Takes events to send (already filtered), in order; called from a publish or after a read. */
  send(events: readonly StoredEvent[]): void;
  /** Bytes taken by `send` and not yet written out to the client. */
  backlogBytes(): number;
  /** Resolves once the backlog is small again (or the client went away). */
  drained(): Promise<void>;
}

/**
 * A run's events after `after` into `sink`, as `runEventStream` streams them (the stored
 * backlog, then live ones; gapless; ending after `run.finished`, or when `closed` aborts),
 * without a promise per event: once caught up, each published event goes to the sink from
 * inside the publish, so a run's many watchers cost a call each, not an async hop each.
 * While reading it holds live events (at most MAX_HELD_EVENTS / MAX_HELD_BYTES, then drops
 * them and reads on); a gap, or a sink whose backlog passes MAX_HELD_BYTES, sends it back
 * to the database, which holds every published event, read at the client's pace.
 */
export function followRunEvents({
  store,
  hub,
  runId,
  after,
  closed,
  sink,
  reasoning = false,
}: RunEventsQuery & { sink: FeedSink }): Promise<void> {
  return new Promise<void>((resolveDone, rejectDone) => {
    let last = after;
    let live = false;
    let ended = false;
    let finishedSeen = false;
    let held: StoredEvent[] = [];
    let heldBytes = 0;
    let overflowed = false;
    /** The reader loop is running (or about to). */
    let reading = false;
    const wanted = (event: StoredEvent) => reasoning || event.type !== "reasoning.delta";

    const end = (err?: unknown) => {
      if (ended) return;
      ended = true;
      unsubscribe();
      closed.removeEventListener("abort", onAbort);
      held = [];
      if (err === undefined) resolveDone();
      else rejectDone(err);
    };
    const onAbort = () => end();

    /** Live, caught up: the event goes to the sink now, or the feed goes back to reading. */
    const onLive = (event: StoredEvent) => {
      if (event.seq <= last) {
        if (event.type === "run.finished") end();
        return;
      }
      if (event.seq > last + 1 || sink.backlogBytes() > MAX_HELD_BYTES) {
        // A gap, or a client not keeping up: what is missing is stored; read it from there.
        startReading();
        return;
      }
      last = event.seq;
      if (wanted(event)) sink.send([event]);
      if (event.type === "run.finished") end();
    };
    const unsubscribe = hub.subscribe(runId, (event) => {
      if (ended) return;
      if (event.type === "run.finished") finishedSeen = true;
      if (live) return onLive(event);
      if (overflowed) return;
      held.push(event);
      heldBytes += event.data.length;
      if (held.length > MAX_HELD_EVENTS || heldBytes > MAX_HELD_BYTES) {
        held = [];
        heldBytes = 0;
        overflowed = true;
      }
    });
    closed.addEventListener("abort", onAbort);

    /** Sends events in order from `events` after `last`; false at a gap (a read is needed). */
    const sendInOrder = (events: readonly StoredEvent[]): boolean => {
      const out: StoredEvent[] = [];
      let gap = false;
      for (const event of events) {
        if (event.seq <= last) {
          if (event.type === "run.finished") finishedSeen = true;
          continue;
        }
        if (event.seq > last + 1) {
          gap = true;
          break;
        }
        last = event.seq;
        if (wanted(event)) out.push(event);
        if (event.type === "run.finished") {
          finishedSeen = true;
          break;
        }
      }
      if (out.length) sink.send(out);
      return !gap;
    };

    const readLoop = async (finishedBefore: boolean) => {
      let confirmed = false;
      for (;;) {
        if (ended) return;
        if (sink.backlogBytes() > MAX_HELD_BYTES) await sink.drained();
        if (ended) return;
        const page = await store.events.after(runId, last, BACKLOG_PAGE);
        if (ended) return;
        const before = last;
        sendInOrder(page);
        if (page.some((e) => e.type === "run.finished" && e.seq > before)) return end();
        if (page.length === BACKLOG_PAGE) continue;
        // Caught up with what is stored: what was held while reading comes next.
        const wasOverflowed = overflowed;
        overflowed = false;
        const pending = held;
        held = [];
        heldBytes = 0;
        if (wasOverflowed || !sendInOrder(pending)) continue;
        if (pending.some((e) => e.type === "run.finished")) return end();
        if (finishedBefore || finishedSeen) {
          // The run has ended and everything stored after `last` was read: one more read
          // makes sure nothing stored is left.
          if (confirmed) return end();
          confirmed = true;
          continue;
        }
        live = true;
        reading = false;
        return;
      }
    };
    let finishedBefore: boolean | null = null;
    const startReading = () => {
      live = false;
      if (reading || ended) return;
      reading = true;
      const run = async () => {
        finishedBefore ??= (await store.runs.get(runId))?.status === "finished";
        await readLoop(finishedBefore);
      };
      run().catch((err) => end(err));
    };
    startReading();
  });
}
