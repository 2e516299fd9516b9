import { createServer, request, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, expect, it } from "vitest";
import { SseConnection, sseFrame } from "../../src/http/sse-connection.js";
import type { StoredEvent } from "../../src/store/store.js";

const event = (seq: number, data: string, type = "text.delta"): StoredEvent => ({ seq, type, data });

let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

/** One write a connection made: through the response, or of its own bytes to the socket. */
interface Write {
  via: "response" | "socket";
  chunk: Buffer | string;
}

/**
 * Logs `res`'s writes: the response's own, and whole chunks of the chunked body written to
 * its socket directly (the response itself writes a chunk's size line on its own).
 */
function logWrites(res: ServerResponse): Write[] {
  const writes: Write[] = [];
  const socket = res.socket as Socket;
  const write = res.write.bind(res) as (chunk: string | Buffer) => boolean;
  res.write = ((chunk: string | Buffer) => {
    writes.push({ via: "response", chunk });
    return write(chunk);
  }) as typeof res.write;
  const socketWrite = socket.write.bind(socket) as (chunk: string | Buffer) => boolean;
  socket.write = ((chunk: string | Buffer) => {
    if (Buffer.isBuffer(chunk) && /^[0-9a-f]+\r\n.*\r\n$/s.test(chunk.toString("latin1")))
      writes.push({ via: "socket", chunk });
    return socketWrite(chunk);
  }) as typeof socket.write;
  return writes;
}

/** A real server whose `n` responses are handed to `handle`; resolves with the bodies the clients read. */
async function serveMany(n: number, handle: (responses: ServerResponse[], writes: Write[][]) => Promise<void>) {
  const responses: ServerResponse[] = [];
  const writes: Write[][] = [];
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    responses.push(res);
    writes.push(logWrites(res));
    if (responses.length === n) {
      void handle(responses, writes).then(() => {
        for (const r of responses) r.end();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  close = () => new Promise((resolve) => server.close(() => resolve()));
  const { port } = server.address() as AddressInfo;
  const read = () =>
    new Promise<string>((resolve, reject) => {
      request({ host: "127.0.0.1", port, path: "/" }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (part) => (body += part));
        res.on("end", () => resolve(body));
      })
        .on("error", reject)
        .end();
    });
  return Promise.all(Array.from({ length: n }, read));
}

/** One response handed to `handle`; resolves with the body the client read. */
async function serve(handle: (res: ServerResponse, writes: Write[]) => Promise<void>) {
  const [body] = await serveMany(1, ([res], [writes]) => handle(res as ServerResponse, writes as Write[]));
  return body as string;
}

it("frames sent in one turn of the event loop leave in one write per connection, in order", async () => {
  let seen: Write[] = [];
  const body = await serve(async (res, writes) => {
    const connection = new SseConnection(res);
    connection.send([event(1, '{"a":1}'), event(2, '{"b":2}')]);
    connection.send([event(3, '{"c":3}')]);
    expect(writes).toEqual([]);
    expect(connection.backlogBytes()).toBeGreaterThan(0);
    await new Promise((resolve) => setImmediate(resolve));
    connection.send([event(4, '{"d":"é🙂"}')]);
    connection.flush();
    seen = [...writes];
  });
  // The first carries the response's head, so it goes through the response; the next is
  // one chunk of the chunked body written to the socket directly.
  expect(seen.map((w) => w.via)).toEqual(["response", "socket"]);
  expect(seen[1]?.chunk.toString()).toBe(`${(46).toString(16)}\r\nid: 4\nevent: text.delta\ndata: {"d":"é🙂"}\n\n\r\n`);
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

it("the watchers of one flush write one shared buffer: an event is encoded once, chunk framing included", async () => {
  const shared = [event(1, '{"a":1}'), event(2, '{"b":2}')];
  let direct: Write[] = [];
  const bodies = await serveMany(3, async (responses, writes) => {
    const connections = responses.map((res) => new SseConnection(res));
    // The head goes out first (through the response), as a stream's `retry:` line does.
    for (const res of responses) res.write("retry: 1\n\n");
    await new Promise((resolve) => setImmediate(resolve));
    for (const connection of connections) connection.send(shared);
    await new Promise((resolve) => setImmediate(resolve));
    direct = writes.flatMap((w) => w.filter((x) => x.via === "socket"));
  });
  expect(direct).toHaveLength(3);
  expect(direct[1]?.chunk).toBe(direct[0]?.chunk);
  expect(direct[2]?.chunk).toBe(direct[0]?.chunk);
  for (const body of bodies) {
    expect(body).toBe(
      'retry: 1\n\nid: 1\nevent: text.delta\ndata: {"a":1}\n\nid: 2\nevent: text.delta\ndata: {"b":2}\n\n',
    );
  }
});

it("events handed to `write` leave at once, after what `send` took; one array given to many connections is one buffer", async () => {
  const shared = [event(2, '{"b":2}'), event(3, '{"c":3}')];
  let direct: Write[] = [];
  const bodies = await serveMany(3, async (responses, writes) => {
    const connections = responses.map((res) => new SseConnection(res));
    for (const res of responses) res.write("retry: 1\n\n");
    await new Promise((resolve) => setImmediate(resolve));
    connections[0]?.send([event(1, '{"a":1}')]);
    for (const connection of connections) connection.write(shared);
    // Written already, without waiting for the turn to end; the first connection's sent frame first.
    direct = writes.flatMap((w) => w.filter((x) => x.via === "socket"));
    // A heartbeat the response writes (at once on Node 22, at the next tick on Node 24) is a
    // whole chunk of its own either side of a direct write, so every frame stays whole.
    for (const res of responses) res.write(": heartbeat\n\n");
    for (const connection of connections) connection.write([event(4, '{"d":4}')]);
  });
  expect(direct).toHaveLength(4);
  expect(direct[2]?.chunk).toBe(direct[1]?.chunk);
  expect(direct[3]?.chunk).toBe(direct[1]?.chunk);
  const frame = (seq: number, data: string) => `id: ${seq}\nevent: text.delta\ndata: ${data}\n\n`;
  const rest = `${frame(2, '{"b":2}')}${frame(3, '{"c":3}')}${frame(4, '{"d":4}')}`;
  const heartbeat = ": heartbeat\n\n";
  // The heartbeat once, after a whole frame (the third or the fourth); the frames in order.
  for (const body of bodies) {
    expect(body.split(heartbeat)).toHaveLength(2);
    expect(body.slice(0, body.indexOf(heartbeat))).toMatch(/data: \{"[cd]":[34]\}\n\n$/);
  }
  const withoutHeartbeat = bodies.map((body) => body.replace(heartbeat, ""));
  expect(withoutHeartbeat[0]).toBe(`retry: 1\n\n${frame(1, '{"a":1}')}${rest}`);
  expect(withoutHeartbeat.slice(1)).toEqual([`retry: 1\n\n${rest}`, `retry: 1\n\n${rest}`]);
});

it("a connection writing to its socket directly waits for the socket to drain, so a slow client holds bounded memory", async () => {
  const big = "x".repeat(4 << 20);
  let backlogBefore = -1;
  let backlogAfter = -1;
  let via: string[] = [];
  const body = await serve(async (res, writes) => {
    const connection = new SseConnection(res);
    connection.send([event(1, "{}")]);
    connection.flush();
    await new Promise((resolve) => setImmediate(resolve));
    connection.send([event(2, big)]);
    connection.flush();
    backlogBefore = connection.backlogBytes();
    await connection.drained();
    backlogAfter = connection.backlogBytes();
    via = writes.map((w) => w.via);
  });
  expect(via).toEqual(["response", "socket"]);
  expect(backlogBefore).toBeGreaterThan(1 << 20);
  expect(backlogAfter).toBeLessThan(1 << 20);
  expect(body.endsWith(`data: ${big}\n\n`)).toBe(true);
});

it("an event's frame is encoded once and shared; data with line breaks becomes one data line a line", () => {
  const shared = event(7, "one\ntwo", "message");
  expect(sseFrame(shared).toString()).toBe("id: 7\nevent: message\ndata: one\ndata: two\n\n");
  // The same bytes, not a copy, for every connection that sends it.
  expect(sseFrame(shared)).toBe(sseFrame(shared));
  // Another object with the same seq is encoded on its own (the cache is by event, not seq).
  expect(sseFrame(event(7, "other", "message")).toString()).toBe("id: 7\nevent: message\ndata: other\n\n");
});
