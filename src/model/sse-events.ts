/** One server-sent event: its `event:` name (null when none) and its `data:` lines joined by "\n". */
export interface SseEvent {
  event: string | null;
  data: string;
}

/** Thrown when one event passes its byte limit; nothing of it was parsed. */
export class SseEventTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`one server-sent event passed ${limit} bytes`);
  }
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The event-stream format parsed as the SSE spec says (one leading U+FEFF byte order mark is
 * dropped; lines end in LF, CRLF or CR; `:`
 * starts a comment; a blank line ends an event; an event without data is dropped), fed bytes
 * as they arrive, synchronously: `push` appends the events its bytes complete to `out`, `end`
 * those of a last event left unterminated. The limit is checked as bytes arrive: once an
 * event's bytes pass `maxEventBytes()` (asked anew for each event), parsing stops there,
 * before any of it is decoded, and `failure` holds the {@link SseEventTooLargeError}; the
 * events completed before it are still in `out`. So one huge line costs neither the memory
 * nor the time to parse it.
 */
export class SseParser {
  #limit: number;
  /** Bytes of the line being read, not yet ended. */
  #partial: Buffer[] = [];
  #partialBytes = 0;
  /** Bytes of the event being read so far (its ended lines and the partial one). */
  #eventBytes = 0;
  #data: string[] = [];
  #name: string | null = null;
  /** No line has ended yet: the first may start with a byte order mark. */
  #firstLine = true;
  /** The previous chunk ended in CR: an LF starting this one belongs to that line end. */
  #afterCR = false;
  /** Set when an event passed its limit: nothing more is parsed. */
  failure: SseEventTooLargeError | null = null;

  constructor(private readonly maxEventBytes: () => number) {
    this.#limit = maxEventBytes();
  }

  #endLine(tail: Buffer): SseEvent | null {
    let line = (this.#partialBytes === 0 ? tail : Buffer.concat([...this.#partial, tail])).toString("utf8");
    if (this.#firstLine) {
      this.#firstLine = false;
      if (line.startsWith("\uFEFF")) line = line.slice(1);
    }
    this.#partial = [];
    this.#partialBytes = 0;
    if (line === "") {
      const event = this.#data.length > 0 ? { event: this.#name, data: this.#data.join("\n") } : null;
      this.#data = [];
      this.#name = null;
      this.#eventBytes = 0;
      this.#limit = this.maxEventBytes();
      return event;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.#data.push(value);
    else if (field === "event") this.#name = value;
    return null;
  }

  push(raw: Uint8Array, out: SseEvent[]): void {
    if (this.failure) return;
    const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    let pos = 0;
    if (this.#afterCR && chunk.length > 0 && chunk[0] === LF) pos = 1;
    this.#afterCR = false;
    // Each found once and looked for again only once passed: a chunk of lines ended by one kind
    // alone (CR, or LF) is not scanned to its end for the other at every line (quadratic).
    let nextCR = chunk.indexOf(CR, pos);
    let nextLF = chunk.indexOf(LF, pos);
    while (pos < chunk.length) {
      if (nextLF !== -1 && nextLF < pos) nextLF = chunk.indexOf(LF, pos);
      if (nextCR !== -1 && nextCR < pos) nextCR = chunk.indexOf(CR, pos);
      const end = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      const lineEnd = end === -1 ? chunk.length : end;
      this.#eventBytes += lineEnd - pos + (end === -1 ? 0 : 1);
      if (this.#eventBytes > this.#limit) {
        this.failure = new SseEventTooLargeError(this.#limit);
        return;
      }
      if (end === -1) {
        this.#partial.push(chunk.subarray(pos));
        this.#partialBytes += chunk.length - pos;
        return;
      }
      const event = this.#endLine(chunk.subarray(pos, end));
      pos = end + 1;
      if (chunk[end] === CR) {
        // CRLF is one line end, also when the LF comes in the next chunk.
        if (pos === chunk.length) this.#afterCR = true;
        else if (chunk[pos] === LF) pos++;
      }
      if (event) out.push(event);
    }
  }

  /** The body ended: a last event left unterminated, if any. */
  end(out: SseEvent[]): void {
    if (this.failure) return;
    if (this.#partialBytes > 0) {
      const event = this.#endLine(Buffer.alloc(0));
      if (event) out.push(event);
    }
    if (this.#data.length > 0) out.push({ event: this.#name, data: this.#data.join("\n") });
  }
}
