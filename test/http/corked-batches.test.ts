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
