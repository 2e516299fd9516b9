import type { ServerResponse } from "node:http";
import type { FeedSink } from "../runs/event-feed.js";
import type { StoredEvent } from "../store/store.js";

/**
 * Each event's SSE frame, encoded (to UTF-8 bytes) once however many connections send it:
 * live events are shared objects, so its watchers write the same buffer.
 */
const frames = new WeakMap<StoredEvent, Buffer>();

/** The SSE frame of a stored event: `id: <seq>`, `event: <type>`, its data (one `data:` line a line). */
export function sseFrame(event: StoredEvent): Buffer {
  let frame = frames.get(event);
  if (frame === undefined) {
    const data = event.data.includes("\n") ? event.data.split("\n").join("\ndata: ") : event.data;
    frame = Buffer.from(`id: ${event.seq}\nevent: ${event.type}\ndata: ${data}\n\n`);
    frames.set(event, frame);
  }
  return frame;
}

/** Connections with frames waiting, written together once this turn of the event loop is done. */
const due = new Set<SseConnection>();
let flushScheduled = false;
function flushDue(): void {
  flushScheduled = false;
  for (const connection of due) connection.flush();
  due.clear();
}

/**
 * A response as a FeedSink: frames sent during one turn of the event loop are joined and
 * leave in one write per connection (so a commit's events, or a burst, cost one syscall).
 */
export class SseConnection implements FeedSink {
  #pending: Buffer[] = [];
  #bytes = 0;

  constructor(private readonly raw: ServerResponse) {}

  send(events: readonly StoredEvent[]): void {
    for (const event of events) {
      const frame = sseFrame(event);
      this.#pending.push(frame);
      this.#bytes += frame.length;
    }
    due.add(this);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flushDue);
    }
  }

  backlogBytes(): number {
    return this.#bytes + this.raw.writableLength;
  }

  /** Writes what is pending now, then resolves once the response has drained (or closed). */
  drained(): Promise<void> {
    this.flush();
    const raw = this.raw;
    if (raw.destroyed || raw.writableEnded || !raw.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        raw.off("drain", done);
        raw.off("close", done);
        resolve();
      };
      raw.on("drain", done);
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
    due.delete(this);
    if (this.raw.destroyed || this.raw.writableEnded) return;
    // One frame: its shared buffer as it is; several: joined into one write.
    this.raw.write(pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, bytes));
  }
}
