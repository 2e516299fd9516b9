/**
 * A chat stream whose client stops reading and then goes away (useChat's stop() on a slow link,
 * a closed tab). The stream's frames were written by the SSE plugin, which on a full socket waits
 * for 'drain' or 'error' only: a client leaving then closes the response, which never drains, so
 * the stream hung for good: the run of a POST was not cancelled and the hub subscription was never
 * released, not even once the run had finished. Now the client leaving ends the stream at once:
 * the run of a POST is cancelled, and every chat stream (POST or resume) lets its subscription go.
 */
import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { MODEL_MAX_OUTPUT_CHARS: "100000000" } });
});
afterAll(async () => {
  await server?.close();
});

const piece = "x".repeat(8 * 1024);

/** A raw connection that sends `head` (and `body`) and then reads nothing at all. */
async function unreadConnection(head: string, body = ""): Promise<net.Socket> {
  const { port } = new URL(server.url);
  const socket = net.connect(Number(port), "127.0.0.1");
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  socket.pause();
  socket.write(`${head}host: 127.0.0.1\r\n${body ? `content-length: ${Buffer.byteLength(body)}\r\n` : ""}\r\n${body}`);
  return socket;
}

/** The bytes of text the run has stored. */
async function storedText(runId: string): Promise<number> {
  const rows = await server.ctx.store.events.afterWithin(runId, 0, { limit: 5000, bytes: 1 << 30 });
  return rows.events.filter((e) => e.type === "text.delta").reduce((n, e) => n + e.data.length, 0);
}

/**
 * Streams `pieces` × 8 KB of text to a client that reads none of it, then the model waits (the run
 * stays running) while the client goes away. `via` is the chat's POST, or a resume (GET) of a run
 * started over the API.
 */
async function goneAfter(pieces: number, via: "post" | "resume") {
  const hold = gate();
  server.upstream.enqueue({ text: Array.from({ length: pieces }, () => piece), gate: hold.wait });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  let socket: net.Socket;
  if (via === "post") {
    const body = JSON.stringify({ messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "go" }] }] });
    socket = await unreadConnection(
      `POST /sessions/${session.id}/chat HTTP/1.1\r\ncontent-type: application/json\r\n`,
      body,
    );
  } else {
    await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } });
    socket = await unreadConnection(`GET /sessions/${session.id}/chat/stream HTTP/1.1\r\n`);
  }
  try {
    const run = await until(
      async () => (await server.request("GET", `/sessions/${session.id}/runs`)).body.items[0],
      (r) => r !== undefined,
      "the chat's run",
    );
    // Every text piece was stored (the model now waits at its gate): for 1200 pieces, far more than the socket buffers hold.
    await until(
      () => storedText(run.id),
      (bytes) => bytes >= pieces * piece.length,
      "every text piece stored",
    );
    await until(
      () => server.ctx.hub.watcherCount(run.id),
      (n) => n === 1,
      "the chat stream's subscription",
    );
    socket.destroy();
    if (via === "post") {
      const status = await until(
        async () => (await server.request("GET", `/runs/${run.id}`)).body.status,
        (s) => s !== "running",
        "the run to be cancelled",
      ).catch(() => "running");
      expect.soft(status, "the run of a chat stream whose client went away is cancelled").not.toBe("running");
    }
    const watchers = await until(
      () => server.ctx.hub.watcherCount(run.id),
      (n) => n === 0,
      "the stream's subscription to go",
    ).catch(() => server.ctx.hub.watcherCount(run.id));
    expect.soft(watchers, "subscriptions of the run left after its only client went away").toBe(0);
    hold.open();
    const finished = await finishedRun(server, run.id);
    if (via === "post") expect(finished.stopReason).toBe("aborted");
    expect(server.ctx.hub.watcherCount(run.id), "subscriptions of a finished run whose only client went away").toBe(0);
    expect(server.app.openStreams.size).toBe(0);
  } finally {
    hold.open();
    socket.destroy();
  }
}

it("control: a chat client that read nothing of a short answer and goes away: its run is cancelled", async () => {
  await goneAfter(2, "post");
}, 60_000);

it("a chat client that stopped reading (its socket full) and goes away: its run is cancelled and its stream let go", async () => {
  // About 10 MB: more than the socket buffers hold, so the stream waits for its client to read.
  await goneAfter(1200, "post");
}, 60_000);

it("a resumed chat stream whose client stopped reading (its socket full) and goes away is let go", async () => {
  await goneAfter(1200, "resume");
}, 60_000);
