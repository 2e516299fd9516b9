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
 * The events of a `text/event-stream` body, parsed as the SSE spec says (lines end in LF,
 * CRLF or CR; `:` starts a comment; a blank line ends an event; an event without data is
 * dropped), plus a last event left unterminated at the end of the body. The limit is
 * checked as bytes arrive: an event whose bytes pass `maxEventBytes()` (asked anew for each
 * event) throws {@link SseEventTooLargeError} as soon as that many have been read, before
 * any of it is decoded, so one huge line costs neither the memory nor the time to parse it.
 */
export async function* sseEvents(
  body: AsyncIterable<Uint8Array>,
  maxEventBytes: () => number,
): AsyncGenerator<SseEvent> {
  let limit = maxEventBytes();
  /** Bytes of the line being read, not yet ended. */
  let partial: Buffer[] = [];
  let partialBytes = 0;
  /** Bytes of the event being read so far (its ended lines and the partial one). */
  let eventBytes = 0;
  let data: string[] = [];
  let name: string | null = null;
  /** The previous chunk ended in CR: an LF starting this one belongs to that line end. */
  let afterCR = false;

  const endLine = (tail: Buffer): SseEvent | null => {
    const line = (partialBytes === 0 ? tail : Buffer.concat([...partial, tail])).toString("utf8");
    partial = [];
    partialBytes = 0;
    if (line === "") {
      const event = data.length > 0 ? { event: name, data: data.join("\n") } : null;
      data = [];
      name = null;
      eventBytes = 0;
      limit = maxEventBytes();
      return event;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") name = value;
    return null;
  };

  for await (const raw of body) {
    const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    let pos = 0;
    if (afterCR && chunk.length > 0 && chunk[0] === LF) pos = 1;
    afterCR = false;
    let nextCR = chunk.indexOf(CR, pos);
    while (pos < chunk.length) {
      const nextLF = chunk.indexOf(LF, pos);
      if (nextCR !== -1 && nextCR < pos) nextCR = chunk.indexOf(CR, pos);
      const end = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      const lineEnd = end === -1 ? chunk.length : end;
      eventBytes += lineEnd - pos + (end === -1 ? 0 : 1);
      if (eventBytes > limit) throw new SseEventTooLargeError(limit);
      if (end === -1) {
        partial.push(chunk.subarray(pos));
        partialBytes += chunk.length - pos;
        break;
      }
      const event = endLine(chunk.subarray(pos, end));
      pos = end + 1;
      if (chunk[end] === CR) {
        // CRLF is one line end, also when the LF comes in the next chunk.
        if (pos === chunk.length) afterCR = true;
        else if (chunk[pos] === LF) pos++;
      }
      if (event) yield event;
    }
  }
  if (partialBytes > 0) {
    const event = endLine(Buffer.alloc(0));
    if (event) yield event;
  }
  if (data.length > 0) yield { event: name, data: data.join("\n") };
}
