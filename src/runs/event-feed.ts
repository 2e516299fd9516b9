import type { StoredEvent } from "../store/store.js";
import type { AdmissionWatch } from "./admission-watch.js";
import type { RunEventsQuery } from "./event-stream.js";
import { HeldEvents, MAX_HELD_BYTES } from "./held-events.js";
import { type FeedSink, type Follower, followersOf } from "./run-followers.js";

export type { FeedSink };

/**
 * Stored events read per query while replaying: at most this many, and only as many as fit in
 * MAX_HELD_BYTES (at least one), so a page of large events (1 MB inputs) is not read, nor
 * written to a client that takes none of it, whole.
 */
const BACKLOG_PAGE = { limit: 500, bytes: MAX_HELD_BYTES };

/**
 * A run's events after `after` into `sink`, as `runEventStream` streams them (the stored
 * backlog, then live ones; gapless; ending after `run.finished`, or when `closed` aborts: at
 * once, following nothing, when it was aborted before), without a promise per event: once
 * caught up, it is one of its run's live followers (run-followers.ts), handed each publish's
 * events with the others in one loop.
 * While reading it holds live events (at most MAX_HELD_EVENTS / MAX_HELD_BYTES, then drops
 * them and reads on); a gap, or a sink whose backlog passes MAX_HELD_BYTES, sends it back
 * to the database, which holds every published event, read at the client's pace.
 * With `admission` (a watch that saw the run admitted, from `after` 0), it begins with what
 * the watch holds, the run's first events, and goes live without reading the store when they
 * run gapless from the first; else it reads on from the store after the last in order.
 */
export function followRunEvents({
  store,
  hub,
  runId,
  after,
  closed,
  sink,
  reasoning = false,
  finished,
  admission,
}: RunEventsQuery & { sink: FeedSink; admission?: AdmissionWatch }): Promise<void> {
  // Already closed (the client went away before the stream opened): nothing to follow.
  if (closed.aborted) return Promise.resolve();
  return new Promise<void>((resolveDone, rejectDone) => {
    const followers = followersOf(hub, runId);
    let ended = false;
    let finishedSeen = false;
    const held = new HeldEvents();
    /** The reader loop is running (or about to). */
    let reading = false;
    const wanted = (event: StoredEvent) => reasoning || event.type !== "reasoning.delta";

    const end = (err?: unknown) => {
      if (ended) return;
      ended = true;
      followers.remove(follower);
      closed.removeEventListener("abort", onAbort);
      held.clear();
      if (err === undefined) resolveDone();
      else rejectDone(err);
    };
    const onAbort = () => end();

    const follower: Follower = {
      last: after,
      reasoning,
      sink,
      hold(event) {
        if (event.type === "run.finished") finishedSeen = true;
        held.hold(event);
      },
      /** Live, but not right at these events: in order after `last`, or back to reading. */
      take(events) {
        // The run's end published: known whether or not it is sent from here (a client behind,
        // a gap), so a read that then finds nothing more (its session deleted) ends the feed.
        if (events.some((e) => e.type === "run.finished")) finishedSeen = true;
        const out: StoredEvent[] = [];
        // A gap, or a client not keeping up: what is missing is stored; read it from there.
        const inOrder = sink.backlogBytes() <= MAX_HELD_BYTES && advance(events, out);
        if (out.length) sink.write(out);
        if (!inOrder) {
          followers.fallBehind(follower);
          startReading();
        } else if (events.some((e) => e.type === "run.finished")) end();
      },
      finished: () => end(),
      gone() {
        // As for a run whose end was published: what is stored is read, and the feed ends.
        finishedSeen = true;
        followers.fallBehind(follower);
        startReading();
      },
    };
    followers.add(follower);
    closed.addEventListener("abort", onAbort);

    /** Moves `last` along `events` in order, the wanted ones into `out`, up to `run.finished`; false at a gap. */
    const advance = (events: readonly StoredEvent[], out: StoredEvent[]): boolean => {
      for (const event of events) {
        if (event.type === "run.finished") finishedSeen = true;
        if (event.seq <= follower.last) continue;
        if (event.seq > follower.last + 1) return false;
        follower.last = event.seq;
        if (wanted(event)) out.push(event);
        if (event.type === "run.finished") break;
      }
      return true;
    };
    /** Sends events in order from `events` after `last`; false at a gap (a read is needed). */
    const sendInOrder = (events: readonly StoredEvent[]): boolean => {
      const out: StoredEvent[] = [];
      const inOrder = advance(events, out);
      if (out.length) sink.send(out);
      return inOrder;
    };
    /**
     * Sends a page read from the store. What is stored is gapless, except while the run is
     * deleted with its session (its oldest events first): that gap is skipped, as what is
     * missing is gone, so every read moves on (a read again from the same seq would find the
     * same page, without end).
     */
    const sendStored = (page: readonly StoredEvent[]): void => {
      while (!sendInOrder(page)) {
        const next = page.find((event) => event.seq > follower.last);
        if (next === undefined) return;
        follower.last = next.seq - 1;
      }
    };

    const readLoop = async (finishedBefore: boolean) => {
      let confirmed = false;
      for (;;) {
        if (ended) return;
        if (sink.backlogBytes() > MAX_HELD_BYTES) await sink.drained();
        if (ended) return;
        const { events: page, more } = await store.events.afterWithin(runId, follower.last, BACKLOG_PAGE);
        if (ended) return;
        const before = follower.last;
        // Every run stores its first event with itself: none at all, and it is gone.
        if (before === 0 && page.length === 0) return end();
        sendStored(page);
        if (page.some((e) => e.type === "run.finished" && e.seq > before)) return end();
        if (more) continue;
        // Caught up with what is stored: what was held while reading comes next.
        const wasOverflowed = held.overflowed;
        held.resume();
        const pending = held.takeAll();
        if (wasOverflowed || !sendInOrder(pending)) continue;
        if (pending.some((e) => e.type === "run.finished")) return end();
        if (finishedBefore || finishedSeen) {
          // The run has ended and everything stored after `last` was read: one more read
          // makes sure nothing stored is left.
          if (confirmed) return end();
          confirmed = true;
          continue;
        }
        followers.goLive(follower);
        reading = false;
        return;
      }
    };
    // Whether the run had ended before this follower was added: then it publishes nothing
    // more, and a read that stops short of `run.finished` must end the feed (as the caller
    // read it, or read here).
    let finishedBefore: boolean | null = finished ?? null;
    const startReading = () => {
      if (reading || ended) return;
      reading = true;
      const run = async () => {
        // A run that is gone (deleted with its session) publishes nothing more either.
        finishedBefore ??= ((await store.runs.access(runId))?.status ?? "finished") === "finished";
        await readLoop(finishedBefore);
      };
      run().catch((err) => end(err));
    };
    // Taken right after this follower was added, in the same synchronous step: no publish can
    // come between, so the watch's events and the follower's together miss nothing.
    const admitted = after === 0 ? (admission?.take(runId) ?? null) : null;
    if (admitted && admitted.length > 0 && sendInOrder(admitted)) {
      if (finishedSeen) end();
      else followers.goLive(follower);
      return;
    }
    startReading();
  });
}
