import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ObjectSlot } from "../object-slot.js";
import type { FeedSink } from "../runs/event-feed.js";
import type { StoredEvent } from "../store/store.js";

/**
 * Each event's SSE frame, encoded (to UTF-8 bytes) once however many connections send it:
 * live events are shared objects, so its watchers write the same buffer.
 */
const frames = new ObjectSlot<StoredEvent, Buffer>("sse frame");

/** `text` as an SSE message's data: one `data:` line a line of it, ended by the blank line. */
export const sseData = (text: string): string =>
  `data: ${text.includes("\n") ? text.split("\n").join("\ndata: ") : text}\n\n`;

/** The SSE frame of a stored event: `id: <seq>`, `event: <type>`, its data (see sseData). */
export function sseFrame(event: StoredEvent): Buffer {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = Buffer.from(`id: ${event.seq}\nevent: ${event.type}\n${sseData(event.data)}`);
    frames.set(event, frame);
  }
  return frame;
}

const CRLF = Buffer.from("\r\n");

/**
 * The bytes of one flush: the events' frames joined, as they are or as one chunk of a
 * chunked body (`<size hex>\r\n<frames>\r\n`), built once for every connection of the
 * same flush that sends the same events (the watchers of a run, caught up, all do).
 */
class Batch {
  #plain: Buffer | null = null;
  #chunk: Buffer | null = null;
  /** The batch ends its stream: its last event is its run's end. */
  readonly ends: boolean;

  constructor(
    readonly events: readonly StoredEvent[],
    private readonly bytes: number,
  ) {
    this.ends = events.at(-1)?.type === "run.finished";
  }

  /** Whether `events` are this batch's (the same event objects, in order). */
  is(events: readonly StoredEvent[]): boolean {
    if (events.length !== this.events.length) return false;
    for (let i = 0; i < events.length; i++) if (events[i] !== this.events[i]) return false;
    return true;
  }

  plain(): Buffer {
    if (this.#plain === null) {
      const only = this.events.length === 1 ? this.events[0] : undefined;
      this.#plain = only ? sseFrame(only) : Buffer.concat(this.events.map(sseFrame), this.bytes);
    }
    return this.#plain;
  }

  chunk(): Buffer {
    this.#chunk ??= Buffer.concat([Buffer.from(`${this.bytes.toString(16)}\r\n`), this.plain(), CRLF]);
    return this.#chunk;
  }
}

/** Holds `socket`'s writes until this turn of the event loop is done, then sends them together. */
function corkForThisTurn(socket: Socket | null): void {
  if (socket === null || socket.destroyed) return;
  socket.cork();
  setImmediate(() => socket.uncork());
}

/**
 * Connections with frames waiting, written together once this turn of the event loop is done
 * (a connection flushed meanwhile has nothing left to write). An array, not a Set: a Set that
 * has grown old and fills and empties every turn reallocates its table in the old generation
 * at each growth and shrinkage, which only a full collection frees.
 */
let due: SseConnection[] = [];
let flushScheduled = false;
/** The batches of the flush of every due connection under way, by their first event; null outside it. */
let batches: Map<StoredEvent, Batch> | null = null;
function flushDue(): void {
  flushScheduled = false;
  const connections = due;
  due = [];
  batches = new Map();
  try {
    for (const connection of connections) connection.flush();
  } finally {
    batches = null;
  }
}

/** The batch for `events`: during the flush of every due connection, shared by those that send the same. */
function batchOf(events: readonly StoredEvent[], bytes: number): Batch {
  if (batches === null) return new Batch(events, bytes);
  const first = events[0] as StoredEvent;
  const known = batches.get(first);
  if (known?.is(events)) return known;
  const batch = new Batch(events, bytes);
  batches.set(first, batch);
  return batch;
}

/** The batches of event arrays handed to many connections' `write` (a run's caught-up watchers get the same). */
const written = new ObjectSlot<readonly StoredEvent[], Batch>("sse batch");
/** The last of them: the connections of one loop ask for it in a row. */
let lastWritten: Batch | null = null;
function batchOfArray(events: readonly StoredEvent[]): Batch {
  if (lastWritten?.events === events) return lastWritten;
  let batch = written.get(events);
  if (batch === undefined) {
    let bytes = 0;
    for (const event of events) bytes += sseFrame(event).length;
    batch = new Batch(events, bytes);
    written.set(events, batch);
  }
  lastWritten = batch;
  return batch;
}

/**
 * A response as a FeedSink: frames sent during one turn of the event loop are joined and
 * leave in one write per connection (so a commit's events, or a burst, cost one syscall);
 * events handed to `write` leave at once, in one write whose bytes every connection given
 * the same array shares.
 * Once the response's head has gone to its socket and nothing waits in the response
 * itself, the batch's bytes (framed as a chunk of the chunked body by the batch, once for
 * every connection) are written to the socket directly: one `socket.write` of a shared
 * buffer per connection, not the response's per-write chunk framing and corking. Anything
 * else (the head not yet out, heartbeats waiting in the response) goes
 * through the response, so bytes stay in order. The response ends as usual (its
 * terminating chunk follows whatever was written to the socket before).
 */
export class SseConnection implements FeedSink {
  #pending: StoredEvent[] = [];
  #bytes = 0;
  /**
   * The socket, once written to directly: from then on the response's head is out and the
   * response buffers nothing of its own before it (a heartbeat it holds until the next tick
   * is a chunk of its own, whole either side of a direct write), so a write checks no more.
   */
  #direct: Socket | null = null;
  /** Lets the held head go (see holdHead); null when nothing is held. */
  #releaseHead: (() => void) | null = null;

  constructor(private readonly raw: ServerResponse) {}

  /**
   * Holds what the response has written so far (its head) in its socket until the first
   * frames join it, or `ms` pass, or `releaseHead`: the head and a stream's first events
   * (its stored backlog, usually read at once) leave in one write.
   */
  holdHead(ms: number): void {
    const socket = this.raw.socket;
    if (socket === null || socket.destroyed || this.#releaseHead !== null) return;
    socket.cork();
    const timer = setTimeout(() => this.releaseHead(), ms);
    this.#releaseHead = () => {
      clearTimeout(timer);
      socket.uncork();
    };
  }

  /** Sends the head held by holdHead, with whatever was written after it. */
  releaseHead(): void {
    const release = this.#releaseHead;
    if (release === null) return;
    this.#releaseHead = null;
    release();
  }

  send(events: readonly StoredEvent[]): void {
    if (this.#pending.length === 0) due.push(this);
    for (const event of events) {
      this.#pending.push(event);
      this.#bytes += sseFrame(event).length;
    }
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flushDue);
    }
  }

  write(events: readonly StoredEvent[]): void {
    if (this.#pending.length > 0) this.flush();
    this.#write(batchOfArray(events));
  }

  backlogBytes(): number {
    const direct = this.#direct;
    return this.#bytes + (direct === null ? this.raw.writableLength : direct.writableLength);
  }

  /** Writes what is pending now, then resolves once the response has drained (or closed). */
  drained(): Promise<void> {
    this.flush();
    const raw = this.raw;
    if (raw.destroyed || raw.writableEnded) return Promise.resolve();
    // Direct writes fill the socket's buffer, not the response's.
    const socket = raw.socket;
    const target = socket?.writableNeedDrain ? socket : raw.writableNeedDrain ? raw : null;
    if (target === null) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        target.off("drain", done);
        raw.off("close", done);
        resolve();
      };
      target.on("drain", done);
      raw.on("close", done);
    });
  }

  /** Writes what is pending now (also before the response ends). */
  flush(): void {
    const pending = this.#pending;
    if (pending.length === 0) return;
    const bytes = this.#bytes;
    this.#pending = [];
    this.#bytes = 0;
    this.#write(batchOf(pending, bytes));
  }

  #write(batch: Batch): void {
    const raw = this.raw;
    if (raw.destroyed || raw.writableEnded) return;
    // A stream's last frames and the response's end (written when the feed has ended, in this
    // turn of the event loop) leave in one write: the socket is held corked until the turn ends.
    if (batch.ends) corkForThisTurn(raw.socket);
    const direct = this.#direct;
    if (direct !== null && !direct.destroyed) {
      direct.write(batch.chunk());
      return;
    }
    const socket = this.#directSocket();
    if (socket === null) raw.write(batch.plain());
    else if (!raw.chunkedEncoding) socket.write(batch.plain());
    else {
      this.#direct = socket;
      socket.write(batch.chunk());
    }
    this.releaseHead();
  }

  /** The socket to write to directly, or null when the response must do the writing. */
  #directSocket(): Socket | null {
    const raw = this.raw;
    const socket = raw.socket;
    // `headersSent` is true once the head is built; `_headerSent` once it was handed to the socket.
    const headOut = (raw as ServerResponse & { _headerSent?: boolean })._headerSent === true;
    if (socket === null || socket.destroyed || !headOut) return null;
    // Nothing waiting in the response itself (its head, a heartbeat): it is all in the socket.
    return raw.writableLength === socket.writableLength ? socket : null;
  }
}
