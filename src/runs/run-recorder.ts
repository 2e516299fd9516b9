import type { RunEvent, RunEventBody } from "../agent/events.js";
import type { AgentMessage, StoredMessage } from "../agent/messages.js";
import type { Store } from "../store/store.js";
import type { EventHub } from "./event-hub.js";

/** How long streamed text may wait before it is written and published. */
const BUFFER_DELAY_MS = 10;
/** A buffer this long is written at once rather than after the delay. */
const FLUSH_AT = 256;
/**
 * Text deltas buffered together are merged into one event of at most this many characters:
 * they are published together anyway, and a model streaming a token per chunk would
 * otherwise cost a row, a JSON encoding and an SSE frame per token.
 */
const MAX_MERGED_DELTA_CHARS = 1024;
/** While writes fail, at most this many events wait; beyond it the oldest text deltas are dropped. */
const MAX_BUFFERED_WHILE_FAILING = 10_000;

/** Thrown by a write after the recorder was sealed: this process no longer writes the run. */
export class RunSuspendedError extends Error {
  readonly code = "RUN_SUSPENDED";
  constructor() {
    super("the server is shutting down; the run continues after the restart");
  }
}

/**
 * Writes one run's events: gapless seqs, each event in the database before any
 * watcher sees it. Text deltas are buffered briefly and go out with the next
 * write; messages and state changes are written with their events in one transaction.
 */
export class RunRecorder {
  #nextSeq: number;
  #nextMessageSeq: number;
  #deferred: (() => void)[] = [];
  #buffered: { body: RunEventBody; at: string }[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** The last write failed: buffered events are kept (up to a cap) until one succeeds. */
  #failing = false;
  /** Sealed: nothing more is written for this run by this process (see `seal`). */
  #sealed = false;

  constructor(
    private readonly store: Store,
    private readonly hub: EventHub,
    readonly runId: string,
    readonly sessionId: string,
  ) {
    this.#nextSeq = store.events.lastSeq(runId) + 1;
    // One recorder writes a session's messages at a time (one active run per session).
    this.#nextMessageSeq = store.messages.lastSeq(sessionId) + 1;
  }

  /**
   * Queues a database change that may wait for the next write (a step trace): it is
   * made in that write's transaction, saving a commit of its own.
   */
  defer(change: () => void): void {
    this.#deferred.push(change);
  }

  /**
   * Queues an event that may wait a few milliseconds (text deltas, turn starts); text
   * deltas queued one after another become one. A failed
   * background write keeps the events for the next write (which reports the failure);
   * while writes keep failing the oldest text deltas beyond a cap are dropped.
   */
  buffer(body: RunEventBody): void {
    if (this.#sealed) return;
    if (this.#failing && this.#buffered.length >= MAX_BUFFERED_WHILE_FAILING) {
      const oldestDelta = this.#buffered.findIndex((e) => e.body.type === "text.delta");
      this.#buffered.splice(Math.max(oldestDelta, 0), 1);
    }
    const last = this.#buffered.at(-1);
    if (
      body.type === "text.delta" &&
      last?.body.type === "text.delta" &&
      last.body.text.length + body.text.length <= MAX_MERGED_DELTA_CHARS
    ) {
      last.body = { type: "text.delta", text: last.body.text + body.text };
    } else {
      this.#buffered.push({ body, at: new Date().toISOString() });
      if (this.#buffered.length >= FLUSH_AT && !this.#failing) {
        this.#flushInBackground();
        return;
      }
    }
    this.#timer ??= setTimeout(() => this.#flushInBackground(), BUFFER_DELAY_MS);
  }

  #flushInBackground(): void {
    try {
      this.write(() => []);
    } catch {
      // Kept buffered; the next write (a commit) fails with the cause, or succeeds with them.
    }
  }

  /**
   * In one transaction: runs `change` (which returns the events it causes), writes
   * the buffered events and those, then publishes them. Throws if the write failed;
   * then nothing of it is stored or published.
   */
  write<T extends RunEventBody>(change: () => T[]): RunEvent[] {
    if (this.#sealed) throw new RunSuspendedError();
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const buffered = this.#buffered;
    const deferred = this.#deferred;
    let seq = this.#nextSeq;
    let written: { events: RunEvent[]; stored: ReturnType<Store["events"]["insert"]> };
    try {
      written = this.store.transaction(() => {
        for (const change of deferred) change();
        const now = new Date().toISOString();
        const events: RunEvent[] = [
          ...buffered.map(({ body, at }) => ({ ...body, runId: this.runId, seq: seq++, at }) as RunEvent),
          ...change().map((body) => ({ ...body, runId: this.runId, seq: seq++, at: now }) as RunEvent),
        ];
        return { events, stored: this.store.events.insert(events) };
      });
      this.#failing = false;
    } catch (err) {
      this.#failing = String((err as { code?: unknown }).code).startsWith("SQLITE_");
      throw err;
    }
    const { events, stored } = written;
    this.#nextSeq = seq;
    this.#buffered = [];
    this.#deferred = [];
    this.hub.publish(this.runId, stored);
    return events;
  }

  /** Writes a message and its `message` event in one transaction, with `alsoWrite` (ledger rows). */
  commitMessage(message: AgentMessage, alsoWrite?: (stored: StoredMessage) => void): StoredMessage {
    const stored: StoredMessage = {
      ...message,
      sessionId: this.sessionId,
      runId: this.runId,
      seq: this.#nextMessageSeq,
      createdAt: new Date().toISOString(),
    };
    this.write(() => {
      this.store.messages.insert(stored);
      alsoWrite?.(stored);
      return [{ type: "message", message: stored }];
    });
    this.#nextMessageSeq++;
    return stored;
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

  dispose(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
