/**
 * One key makes a run whose events are large without any help from the model: a 1 MB input and
 * 32 steered inputs of 1 MB, each stored in its `message` event (33 MB of events). A replay of
 * it (`GET /runs/{id}/events`, or any stream from seq 1) read a page of up to 500 events at
 * once whatever their size, and wrote all of it to the connection: a watcher that read nothing
 * held the whole page in the server's memory. 30 such watchers grew the server by 851 MB (the
 * key may hold MAX_STREAMS_PER_KEY, 100 by default), and each replay held the event loop about
 * half a second. Now a page read from the store is at most MAX_HELD_BYTES of stored events
 * (at least one), and the next is read once the connection has taken the one before.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const KEY = "key-replayer-0123456789abcdef";
const headers = { authorization: `Bearer ${KEY}` };
const INPUT = "y".repeat(1_000_000);
/** Each would hold the run's 33 MB before; 12 make that 400 MB, far past what the bound allows. */
const WATCHERS = 12;

describe("replays of a run whose events are large", () => {
  let server: TestServer;
  let runId: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY } });
    const s = server;
    s.upstream.enqueue({
      toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
    });
    s.upstream.fallback = () => ({ text: "ok" });
    const session = (await s.request("POST", "/sessions", { body: {}, headers })).body;
    runId = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: INPUT }, headers })).body.id;
    await until(
      async () => (await s.request("GET", `/runs/${runId}`, { headers })).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    const steers = Array.from({ length: 32 }, () =>
      s.request("POST", `/sessions/${session.id}/runs`, { body: { input: INPUT, ifBusy: "steer" }, headers }),
    );
    await until(
      () => s.ctx.store.inputs.pending(runId),
      (pending) => pending.length === 32,
      "the steered inputs",
    );
    await s.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" }, headers });
    expect((await Promise.all(steers)).map((r) => r.status)).toEqual(Array(32).fill(202));
    await finishedRun({ request: (m, p) => s.request(m, p, { headers }) }, runId);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it(`${WATCHERS} watchers that read nothing hold a bounded part of it each`, async () => {
    const port = Number(new URL(server.url).port);
    // The server's side of each watcher's connection: what waits in its write buffer is held in memory.
    const held: net.Socket[] = [];
    const track = (socket: net.Socket) => held.push(socket);
    server.app.server.on("connection", track);
    const started = performance.now();
    const watchers: net.Socket[] = [];
    for (let i = 0; i < WATCHERS; i++) {
      const socket = net.connect(port, "127.0.0.1", () => socket.pause());
      socket.on("error", () => {});
      socket.write(`GET /runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`);
      watchers.push(socket);
    }
    try {
      await until(
        () => server.app.openStreams.size,
        (open) => open === WATCHERS,
        `the ${WATCHERS} streams`,
      );
      const opened = performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const buffered = held.reduce((sum, socket) => sum + socket.writableLength, 0) / 1e6;
      console.log(
        `${WATCHERS} unread replays: opened in ${Math.round(opened)} ms, ${Math.round(buffered)} MB held in their write buffers`,
      );
      // About 2 MB each (MAX_HELD_BYTES, then one more page read), at most 3; not the ~28 MB of a 500-event page.
      expect(held).toHaveLength(WATCHERS);
      expect(buffered).toBeLessThan(WATCHERS * 3);
    } finally {
      server.app.server.off("connection", track);
      for (const socket of watchers) socket.destroy();
    }
  }, 90_000);

  it("a watcher that reads gets every event once, in order", async () => {
    const events = await (await openSse(`${server.url}/runs/${runId}/events`, { headers })).ended;
    const seqs = events.map((e) => Number(e.id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(events.filter((e) => e.event === "message" && e.data.length > 1_000_000)).toHaveLength(33);
    expect(events.at(-1)?.event).toBe("run.finished");
  }, 60_000);
});
