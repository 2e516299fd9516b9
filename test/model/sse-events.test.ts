import { describe, expect, it } from "vitest";
import { type SseEvent, SseEventTooLargeError, SseParser } from "../../src/model/sse-events.js";

/** The events of `chunks` fed one by one; throws the parser's failure after the events before it. */
function parse(chunks: Uint8Array[], maxEventBytes: () => number): { events: SseEvent[]; failure: Error | null } {
  const parser = new SseParser(maxEventBytes);
  const events: SseEvent[] = [];
  for (const chunk of chunks) parser.push(chunk, events);
  parser.end(events);
  return { events, failure: parser.failure };
}

function read(pieces: string[], limit = 1 << 20) {
  const { events, failure } = parse(
    pieces.map((piece) => Buffer.from(piece, "utf8")),
    () => limit,
  );
  if (failure) throw failure;
  return events;
}

describe("SseParser: the event-stream format, read as bytes arrive", () => {
  it("ends lines at LF, CRLF (also split across chunks) and CR; skips comments; joins data lines; keeps event names", () => {
    expect(read([": ping\n", "event: error\ndata: a\r", "\ndata:b\r\r", 'data: {"x":', "1}\n\ndata: [DONE]"])).toEqual([
      { event: "error", data: "a\nb" },
      { event: null, data: '{"x":1}' },
      { event: null, data: "[DONE]" },
    ]);
  });

  it("decodes UTF-8 split across chunks, and drops an event without data", () => {
    const bytes = Buffer.from("data: héllo ✓\n\nevent: x\n\n", "utf8");
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += 3) chunks.push(bytes.subarray(i, i + 3));
    expect(parse(chunks, () => 1024)).toEqual({ events: [{ event: null, data: "héllo ✓" }], failure: null });
  });

  it("drops one leading byte order mark, also split across chunks, and only at the stream's start", () => {
    const bytes = Buffer.from("\uFEFFdata: a\n\n\uFEFFdata: b\n\n", "utf8");
    const chunks = [bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)];
    expect(parse(chunks, () => 1024).events).toEqual([{ event: null, data: "a" }]);
  });

  it("stops once an event passes its limit, asked anew for each event, before the event ends; the events before it are kept", () => {
    expect(() => read(["data: 12345\n\n", "data: 1234567890"], 12)).toThrow(SseEventTooLargeError);
    const limits = [20, 8];
    const { events, failure } = parse(
      [Buffer.from("data: first-event\n\ndata: second\n\ndata: third\n\n")],
      () => limits.shift() ?? 0,
    );
    expect(failure?.message).toMatch(/passed 8 bytes/);
    expect(events.map((e) => e.data)).toEqual(["first-event"]);
  });
});
