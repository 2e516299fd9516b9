import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { corkedBatches } from "../../src/http/sse.js";

let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

it("frames of one turn leave together, and the response is no longer corked when the frames end, before it is ended", async () => {
  let corkedAtEnd = -1;
  let corkedWhileWriting = -1;
  const server = createServer(async (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    async function* frames() {
      yield "data: 1\n\n";
      yield "data: 2\n\n";
      yield "data: [DONE]\n\n";
    }
    for await (const frame of corkedBatches(frames(), res)) {
      res.write(frame);
      corkedWhileWriting = res.writableCorked;
    }
    // Node 22 ends a chunked body before writing what is still corked in the response (its
    // `end()` sends the last chunk, then uncorks): the last frames would never be read.
    corkedAtEnd = res.writableCorked;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  close = () => new Promise((resolve) => server.close(() => resolve()));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  expect(await res.text()).toBe("data: 1\n\ndata: 2\n\ndata: [DONE]\n\n");
  expect(corkedWhileWriting).toBe(1);
  expect(corkedAtEnd).toBe(0);
});

it("a batch stays within the response's high-water mark, and a frame larger than it goes uncorked, so a writer waiting for 'drain' gets it", async () => {
  let mostCorked = 0;
  let hwm = 0;
  const big = `data: ${"b".repeat(100_000)}\n\n`;
  const small = `data: ${"s".repeat(6_000)}\n\n`;
  const server = createServer(async (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    hwm = res.writableHighWaterMark;
    // The bytes written since the response was last corked, while it is.
    let batch = 0;
    const cork = res.cork.bind(res);
    res.cork = () => {
      batch = 0;
      cork();
    };
    async function* frames() {
      yield "data: start\n\n";
      yield big;
      for (let i = 0; i < 10; i++) yield small;
      yield "data: [DONE]\n\n";
    }
    for await (const frame of corkedBatches(frames(), res)) {
      // As the SSE plugin writes: on false, it waits for 'drain' (which Node 22 does not emit
      // for what a corked response held past its mark).
      if (res.writableCorked > 0) {
        batch += Buffer.byteLength(frame);
        mostCorked = Math.max(mostCorked, batch);
      }
      const more = res.write(frame);
      if (!more) await new Promise((resolve) => res.once("drain", resolve));
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  close = () => new Promise((resolve) => server.close(() => resolve()));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  const text = await res.text();
  expect(text).toBe(`data: start\n\n${big}${small.repeat(10)}data: [DONE]\n\n`);
  expect(hwm).toBeGreaterThan(0);
  expect(mostCorked).toBeLessThanOrEqual(hwm);
});
