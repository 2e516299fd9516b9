import { createServer, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { SseConnection, sseFrame } from "../../src/http/sse-connection.js";
import type { StoredEvent } from "../../src/store/store.js";

const event = (seq: number, data: string, type = "text.delta"): StoredEvent => ({ seq, type, data });

let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

/** A real server whose one response is handed to `handle`; resolves with the body the client read. */
async function serve(handle: (res: ServerResponse, writes: string[]) => Promise<void>) {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const writes: string[] = [];
    const write = res.write.bind(res) as (chunk: string) => boolean;
    res.write = ((chunk: string) => {
      writes.push(chunk.toString());
      return write(chunk);
    }) as typeof res.write;
    void handle(res, writes).then(() => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  close = () => new Promise((resolve) => server.close(() => resolve()));
  const { port } = server.address() as AddressInfo;
  return new Promise<string>((resolve, reject) => {
    request({ host: "127.0.0.1", port, path: "/" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (part) => (body += part));
      res.on("end", () => resolve(body));
    })
      .on("error", reject)
      .end();
  });
}

it("frames sent in one turn of the event loop leave in one write per connection, in order", async () => {
  let seen: string[] = [];
  const body = await serve(async (res, writes) => {
    const connection = new SseConnection(res);
    connection.send([event(1, '{"a":1}'), event(2, '{"b":2}')]);
    connection.send([event(3, '{"c":3}')]);
    expect(writes).toEqual([]);
    expect(connection.backlogBytes()).toBeGreaterThan(0);
    await new Promise((resolve) => setImmediate(resolve));
    connection.send([event(4, '{"d":"é🙂"}')]);
    connection.flush();
    seen = writes;
  });
  expect(seen).toHaveLength(2);
  expect(body).toBe(
    'id: 1\nevent: text.delta\ndata: {"a":1}\n\nid: 2\nevent: text.delta\ndata: {"b":2}\n\n' +
      'id: 3\nevent: text.delta\ndata: {"c":3}\n\nid: 4\nevent: text.delta\ndata: {"d":"é🙂"}\n\n',
  );
});

it("waiting for the client to drain writes what is pending first, so a replay holds at most a page in memory", async () => {
  let before = -1;
  let after = -1;
  const big = "x".repeat(4 << 20);
  const body = await serve(async (res, writes) => {
    const connection = new SseConnection(res);
    connection.send([event(1, big)]);
    before = writes.length;
    const drained = connection.drained();
    after = writes.length;
    await drained;
    expect(connection.backlogBytes()).toBeLessThan(1 << 20);
  });
  expect([before, after]).toEqual([0, 1]);
  expect(body.length).toBe(big.length + "id: 1\nevent: text.delta\ndata: \n\n".length);
});

it("an event's frame is encoded once and shared; data with line breaks becomes one data line a line", () => {
  const shared = event(7, "one\ntwo", "message");
  expect(sseFrame(shared).toString()).toBe("id: 7\nevent: message\ndata: one\ndata: two\n\n");
  // The same bytes, not a copy, for every connection that sends it.
  expect(sseFrame(shared)).toBe(sseFrame(shared));
  // Another object with the same seq is encoded on its own (the cache is by event, not seq).
  expect(sseFrame(event(7, "other", "message")).toString()).toBe("id: 7\nevent: message\ndata: other\n\n");
});
