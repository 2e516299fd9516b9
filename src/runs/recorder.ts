import type { AgentMessage } from "../agent/messages.js";
import type { RunStats } from "../agent/stats.js";
import type { RunEvent, RunEventBody } from "../domain/run-events.js";
import type { StoredMessage } from "../domain/stored-message.js";
import { isConflict, isStorageError } from "../store/errors.js";
import type { RunChange, RunLease, Store } from "../store/store.js";
import { EarliestTimer } from "./earliest-timer.js";
import { endOfTurn } from "./end-of-turn.js";
import type { EventHub } from "./event-hub.js";
import { isoNow } from "./iso-now.js";
import { latestStatsOnly } from "./latest-stats.js";
import { addBuffered, type BufferedEvent, FLUSH_AT, NEXT_WRITE_DELAY_MS, RETRY_DELAY_MS } from "./recorder-buffer.js";
import { RunSuspendedError, type Stamp, type WriteBatch } from "./run-write.js";

export { NEXT_WRITE_DELAY_MS } from "./recorder-buffer.js";

/** The batch of a write made only of what was buffered and deferred (never changed by a write). */
const NOTHING_MORE: WriteBatch = Object.freeze({ changes: [], events: [] }) as unknown as WriteBatch;
const nothingMore = (): WriteBatch => NOTHING_MORE;
const ignore = (): void => {};

/**
 * The one writer of a run: every change of it goes through here as RunChanges with the
 * events they cause, one batch per `Store.commitRun`. Writes are queued (one at a time, in
 * order), seqs are gapless, and each event is in the database before any watcher sees it.
 * Text deltas are buffered until the current turn of the event loop is done (what arrives
 * meanwhile, or while a write is in flight, goes out in one write); turn starts and deferred
 * changes (a step trace and its stats) wait up to NEXT_WRITE_DELAY_MS for the next write.
 */
export class RunRecorder {
  #nextSeq: number;
  /** null: not known yet, read before the first write (see open's `lastMessage`). */
  #nextMessageSeq: number | null;
  #deferred: RunChange[] = [];
  #buffered: BufferedEvent[] = [];
  /** A write of what waits (deferred changes, a turn start, events while writes fail). */
  readonly #timer = new EarliestTimer(() => this.#flushInBackground());
  /** A write of what is buffered is due once the current turn of the event loop is done (see endOfTurn). */
  #flushDue = false;
  readonly #flushIfDue = (): void => {
    if (this.#flushDue) this.#flushInBackground();
  };
  readonly #settled = (): void => {
    this.#inFlight--;
  };
  #queue: Promise<unknown> = Promise.resolve();
  /** Writes started or queued and not yet settled. */
  #inFlight = 0;
  /** The last write failed on storage: buffered events are kept (up to a cap) until one succeeds. */
  #failing = false;
  /** Sealed: nothing more is written for this run by this process (see `seal`). */
  #sealed = false;
  /** Told once when the run is left (see onLeft). */
  #onLeft: ((why: "fenced" | "outcome_unknown") => void) | null = null;

  private constructor(
    private readonly store: Store,
    private readonly hub: EventHub,
    readonly runId: string,
    readonly sessionId: string,
    seqs: { lastEvent: number; lastMessage: number | null },
    /** The lease every write names (see Store.commitRun); null: unfenced. */
    readonly lease: RunLease | null,
  ) {
    this.#nextSeq = seqs.lastEvent + 1;
    this.#nextMessageSeq = seqs.lastMessage === null ? null : seqs.lastMessage + 1;
  }

  /**
   * A recorder continuing from what is stored. One recorder writes a session's messages at
   * a time (the database keeps one unfinished run per session). `lastEvent` may be given
   * when the caller just wrote the run's first events, `lastMessage` when it read the
   * session's history since the run was stored; `lastMessage: null` puts its read off to the
   * first write (whose failure is then that write's own), so that opening reads nothing when
   * both are given. With `lease`, every write is fenced by it.
   */
  static async open({
    store,
    hub,
    runId,
    sessionId,
    lastEvent,
    lastMessage,
    lease = null,
  }: {
    store: Store;
    hub: EventHub;
    runId: string;
    sessionId: string;
    lastEvent?: number;
    lastMessage?: number | null;
    lease?: RunLease | null;
  }): Promise<RunRecorder> {
    const [events, messages] = await Promise.all([
      lastEvent ?? store.events.lastSeq(runId),
      lastMessage === undefined ? store.messages.lastSeq(sessionId) : lastMessage,
    ]);
    return new RunRecorder(store, hub, runId, sessionId, { lastEvent: events, lastMessage: messages }, lease);
  }

  /** Learns the session's last message seq (see open's `lastMessage: null`); a failure fails the write that asked. */
  #readLastMessage(): Promise<void> {
    return this.store.messages.lastSeq(this.sessionId).then(
      (last) => {
        this.#nextMessageSeq ??= last + 1;
      },
      (err: unknown) => {
        this.#failing = isStorageError(err);
        throw err;
      },
    );
  }

  /**
   * `listener` is told (once) when this process leaves the run: a write refused because it no
   * longer holds the run (StoreConflictError `fenced`), or a write whose outcome is unknown
   * (StorageError `outcomeUnknown`: it may be stored, and a retry of its events would collide
   * with them), after which only recovery from what is stored continues the run correctly. The
   * recorder is sealed by then, so nothing more of the run is written here.
   */
  onLeft(listener: (why: "fenced" | "outcome_unknown") => void): void {
    this.#onLeft = listener;
  }

  /** Queues a change that may wait for the run's next write, at most NEXT_WRITE_DELAY_MS. */
  defer(change: RunChange): void {
    if (this.#sealed) return;
    this.#deferred.push(change);
    if (!this.#flushDue) this.#timer.within(this.#failing ? RETRY_DELAY_MS : NEXT_WRITE_DELAY_MS);
  }

  /**
   * Queues an event that may wait for the end of this turn of the event loop (text and
   * reasoning deltas): nothing waits on a timer, and what arrives together (the chunks of one
   * read, or everything queued while a write is in flight, which this write then waits
   * behind) is written together; deltas of one kind queued one after another become one.
   * A turn start waits for the run's next write, at most NEXT_WRITE_DELAY_MS: a write, a
   * transaction and an SSE frame fewer per turn. A failed background write keeps the events
   * for the next write (which reports the failure), retried after RETRY_DELAY_MS; while
   * writes keep failing the oldest text deltas beyond a cap are dropped.
   */
  buffer(body: RunEventBody): void {
    if (this.#sealed) return;
    if (addBuffered(this.#buffered, body, this.#failing) && this.#buffered.length >= FLUSH_AT && !this.#failing) {
      this.#flushInBackground();
      return;
    }
    if (this.#failing) this.#timer.within(RETRY_DELAY_MS);
    else if (body.type === "turn.started") {
      if (!this.#flushDue) this.#timer.within(NEXT_WRITE_DELAY_MS);
    } else if (!this.#flushDue) {
      this.#flushDue = true;
      endOfTurn.queue(this.#flushIfDue);
      this.#timer.clear();
    }
  }

  #clearScheduled(): void {
    this.#timer.clear();
    this.#flushDue = false;
  }

  #flushInBackground(): void {
    this.#clearScheduled();
    // On failure the events stay buffered; the next write (a commit) fails with the cause, or succeeds with them.
    this.write(nothingMore).catch(ignore);
  }

  /**
   * Queues one write: `build` (called when the write's turn comes, with `stamp` to place
   * messages) returns its changes and events; the deferred changes and buffered events go
   * with them. Resolves once all of it is stored and published; rejects when the write
   * failed, and then nothing of it is stored or published.
   */
  write(build: (stamp: Stamp) => WriteBatch): Promise<RunEvent[]> {
    return this.#enqueue(build, false);
  }

  /** `last`: the one write let through once sealed (see sealWithDuration). */
  #enqueue(build: (stamp: Stamp) => WriteBatch, last: boolean): Promise<RunEvent[]> {
    // Nothing in flight: the write starts now (its batch is built in this tick), else it queues.
    const next = this.#inFlight === 0 ? this.#write(build, last) : this.#queue.then(() => this.#write(build, last));
    this.#inFlight++;
    this.#queue = next.then(this.#settled, this.#settled);
    return next;
  }

  // Written with promise callbacks rather than async/await: this is the hot path of every
  // commit, and each async level costs the loop microtask turns.
  #write(build: (stamp: Stamp) => WriteBatch, last: boolean): Promise<RunEvent[]> {
    if (this.#sealed && !last) return Promise.reject(new RunSuspendedError());
    if (this.#nextMessageSeq === null) return this.#readLastMessage().then(() => this.#write(build, last));
    this.#clearScheduled();
    let messageSeq = this.#nextMessageSeq;
    const createdAt = isoNow();
    const batch = build((message) => ({
      ...message,
      sessionId: this.sessionId,
      runId: this.runId,
      seq: messageSeq++,
      createdAt,
    }));
    const buffered = this.#buffered;
    const deferred = this.#deferred;
    if (!buffered.length && !deferred.length && !batch.changes.length && !batch.events.length) {
      return Promise.resolve([]);
    }
    this.#buffered = [];
    this.#deferred = [];
    let seq = this.#nextSeq;
    const { runId } = this;
    const events: RunEvent[] = [];
    for (const { body, at } of buffered) events.push({ ...body, runId, seq: seq++, at } as RunEvent);
    for (const body of batch.events) events.push({ ...body, runId, seq: seq++, at: createdAt } as RunEvent);
    const changes = latestStatsOnly(deferred.length ? deferred.concat(batch.changes) : batch.changes);
    return this.store.commitRun(this.runId, changes, events, this.lease ?? undefined).then(
      (stored) => {
        this.#failing = false;
        this.#nextSeq = seq;
        this.#nextMessageSeq = messageSeq;
        this.hub.publish(this.runId, stored);
        return events;
      },
      (err: unknown) => {
        const unknown = isStorageError(err) && err.outcomeUnknown;
        if (unknown || isConflict(err, "fenced")) {
          this.seal();
          const listener = this.#onLeft;
          this.#onLeft = null;
          listener?.(unknown ? "outcome_unknown" : "fenced");
          throw err;
        }
        this.#failing = isStorageError(err);
        if (this.#sealed) throw err;
        // Kept for the next write, before anything queued meanwhile.
        this.#buffered = [...buffered, ...this.#buffered];
        this.#deferred = [...deferred, ...this.#deferred];
        throw err;
      },
    );
  }

  /**
   * Writes a message and its `message` event in one transaction, with `also`: the changes it
   * brings (its stats), the events it causes after it (a plan's update), a tool result's `tool`
   * and whether it ran (`ran`).
   */
  commitMessage(
    message: AgentMessage,
    also: Partial<WriteBatch> & { tool?: string; ran?: boolean } = {},
  ): Promise<StoredMessage> {
    let stored: StoredMessage | undefined;
    return this.write((stamp) => {
      stored = stamp(message);
      return {
        changes: [{ kind: "message", message: stored, tool: also.tool, ran: also.ran }, ...(also.changes ?? [])],
        events: [{ type: "message", message: stored }, ...(also.events ?? [])],
      };
    }).then(() => stored as StoredMessage);
  }

  /**
   * Stops every later write (each throws RunSuspendedError) and drops what was buffered:
   * the run stays in the database exactly as its last commit left it, as after a crash,
   * for the next start to resume.
   */
  seal(): void {
    this.#sealed = true;
    this.#buffered = [];
    this.#deferred = [];
    this.dispose();
  }

  /**
   * Seals (see seal) with one last write, after those already started or queued: `stats` (the
   * run's latest counts) with `durationMs` as its wall time, written after any deferred stats
   * (so it is the one stored). Rejects when that write failed; a recorder already sealed writes
   * nothing.
   */
  sealWithDuration(durationMs: number, stats: RunStats): Promise<void> {
    if (this.#sealed) return Promise.resolve();
    this.seal();
    const last = (): WriteBatch => ({
      changes: [{ kind: "stats", stats: { ...stats, durationMs } }],
      events: [],
    });
    return this.#enqueue(last, true).then(ignore);
  }

  dispose(): void {
    this.#clearScheduled();
  }
}
