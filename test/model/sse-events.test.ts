import { describe, expect, it } from "vitest";
import { SseEventTooLargeError, sseEvents } from "../../src/model/sse-events.js";

async function read(pieces: string[], limit = 1 << 20) {
  const body = (async function* () {
    for (const piece of pieces) yield Buffer.from(piece, "utf8");
  })();
  const events = [];
  for await (const event of sseEvents(body, () => limit)) events.push(event);
  return events;
}

describe("sseEvents: the event-stream format, read as bytes arrive", () => {
  it("ends lines at LF, CRLF (also split across chunks) and CR; skips comments; joins data lines; keeps event names", async () => {
    expect(
      await read([": ping\n", "event: error\ndata: a\r", "\ndata:b\r\r", 'data: {"x":', "1}\n\ndata: [DONE]"]),
    ).toEqual([
      { event: "error", data: "a\nb" },
      { event: null, data: '{"x":1}' },
      { event: null, data: "[DONE]" },
    ]);
  });

  it("decodes UTF-8 split across chunks, and drops an event without data", async () => {
    const bytes = Buffer.from("data: héllo ✓\n\nevent: x\n\n", "utf8");
    const body = (async function* () {
      for (let i = 0; i < bytes.length; i += 3) yield bytes.subarray(i, i + 3);
    })();
    const events = [];
    for await (const event of sseEvents(body, () => 1024)) events.push(event);
    expect(events).toEqual([{ event: null, data: "héllo ✓" }]);
  });

  it("throws once an event passes its limit, asked anew for each event, before the event ends", async () => {
    await expect(read(["data: 12345\n\n", "data: 1234567890"], 12)).rejects.toBeInstanceOf(SseEventTooLargeError);
    const limits = [20, 8];
    const body = (async function* () {
      yield Buffer.from("data: first-event\n\ndata: second\n\n");
    })();
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const event of sseEvents(body, () => limits.shift() ?? 0)) seen.push(event.data);
      })(),
    ).rejects.toThrow(/passed 8 bytes/);
    expect(seen).toEqual(["first-event"]);
  });
});
