import type { RunEvent, RunEventBody } from "../agent/events.js";
import type { AgentMessage, StoredMessage } from "../agent/messages.js";
import type { Store } from "../store/store.js";
import type { EventHub } from "./event-hub.js";

/** How long streamed text may wait before it is written and published. */
const BUFFER_DELAY_MS = 10;
/** Buffered events kept while writes fail; beyond it the oldest text deltas are dropped. */
const MAX_BUFFERED = 10_000;

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
  #lastError: unknown = null;

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

  /** The error of the last failed background flush, if writes are failing. */
  get lastError(): unknown {
    return this.#lastError;
  }

  /**
   * Queues a database change that may wait for the next write (a step trace): it is
   * made in that write's transaction, saving a commit of its own.
   */
  defer(change: () => void): void {
    this.#deferred.push(change);
  }

  /** Queues an event that may wait a few milliseconds (text deltas, turn starts). */
  buffer(body: RunEventBody): void {
    if (this.#buffered.length >= MAX_BUFFERED) this.#buffered.shift();
    this.#buffered.push({ body, at: new Date().toISOString() });
    this.#timer ??= setTimeout(() => {
      this.#timer = null;
      try {
        this.write(() => []);
        this.#lastError = null;
      } catch (err) {
        this.#lastError = err;
      }
    }, BUFFER_DELAY_MS);
  }

  /**
   * In one transaction: runs `change` (which returns the events it causes), writes
   * the buffered events and those, then publishes them. Throws if the write failed;
   * then nothing of it is stored or published.
   */
  write<T extends RunEventBody>(change: () => T[]): RunEvent[] {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const buffered = this.#buffered;
    const deferred = this.#deferred;
    let seq = this.#nextSeq;
    const { events, stored } = this.store.transaction(() => {
      for (const change of deferred) change();
      const now = new Date().toISOString();
      const events: RunEvent[] = [
        ...buffered.map(({ body, at }) => ({ ...body, runId: this.runId, seq: seq++, at }) as RunEvent),
        ...change().map((body) => ({ ...body, runId: this.runId, seq: seq++, at: now }) as RunEvent),
      ];
      return { events, stored: this.store.events.insert(events) };
    });
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

  /** Writes whatever is buffered or deferred now. */
  flush(): void {
    if (this.#buffered.length || this.#deferred.length) this.write(() => []);
  }

  dispose(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
