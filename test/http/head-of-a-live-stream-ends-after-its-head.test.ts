/**
 * openapi.yaml: "Every `GET` route also answers `HEAD`", and requests pipelined on one
 * connection are answered one at a time, each once the answer before it has been sent. A HEAD
 * answer is its head alone: once the head is out it has been sent, and the connection serves
 * the client's next request (what a keep-alive client such as curl or undici sends there),
 * while the run is still live. The stream routes (a run's events, a chat's resume) answer it so.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

/** A live run (its model reply held until `held` opens) in a new session. */
async function liveRun(held: Promise<void>): Promise<{ sessionId: string; runId: string }> {
  server.upstream.enqueue({ text: "slow answer", gate: held });
  const session = await server.request("POST", "/sessions", { body: {} });
  const run = await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "hi" } });
  expect(run.status).toBe(201);
  return { sessionId: session.body.id, runId: run.body.id };
}

/** Sends HEAD `path`, then GET /healthz, on one connection: both are answered while the run is live. */
async function headThenHealthz(path: string, runId: string): Promise<void> {
  const { port } = new URL(server.url);
  const socket: Socket = connect(Number(port), "127.0.0.1");
  let received = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    received += chunk;
  });
  try {
    socket.write(`HEAD ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    // The HEAD's answer is its head alone: the stream is open, the run still live.
    await expect.poll(() => received).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n$/);
    expect(received).toMatch(/content-type: text\/event-stream/i);
    socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    // The second answer on the connection comes now, not when the run ends.
    await expect.poll(() => received.split("HTTP/1.1 200 OK").length - 1, { timeout: 5_000 }).toBe(2);
    expect(received).toContain('{"status":"ok"}');
    expect((await server.request("GET", `/runs/${runId}`)).body.status).not.toBe("finished");
  } finally {
    socket.destroy();
  }
}

it("after HEAD /runs/{id}/events of a live run, the next request on the same connection is answered while the run is still live", async () => {
  const held = gate();
  try {
    const { runId } = await liveRun(held.wait);
    await headThenHealthz(`/runs/${runId}/events`, runId);
  } finally {
    held.open();
  }
});

it("after HEAD /sessions/{id}/chat/{chatId}/stream of a live run, the next request on the same connection is answered", async () => {
  const held = gate();
  try {
    const { sessionId, runId } = await liveRun(held.wait);
    await headThenHealthz(`/sessions/${sessionId}/chat/chat-1/stream`, runId);
    await headThenHealthz(`/sessions/${sessionId}/chat/stream`, runId);
  } finally {
    held.open();
  }
});

it("a HEAD of a live run's events holds no stream slot and is no open stream once answered", async () => {
  const key = "key-a-0123456789abcdef";
  const auth = { authorization: `Bearer ${key}` };
  const keyed = await startTestServer({ env: { AGENT_API_KEYS: key, MAX_STREAMS_PER_KEY: "1" } });
  const held = gate();
  try {
    keyed.upstream.enqueue({ text: "slow answer", gate: held.wait });
    const session = await keyed.request("POST", "/sessions", { body: {}, headers: auth });
    const run = await keyed.request("POST", `/sessions/${session.body.id}/runs`, {
      body: { input: "hi" },
      headers: auth,
    });
    const url = `${keyed.url}/runs/${run.body.id}/events`;
    const head = await fetch(url, { method: "HEAD", headers: auth });
    expect(head.status).toBe(200);
    expect(keyed.app.openStreams.size).toBe(0);
    // The key's one slot is free: its stream opens.
    const reading = new AbortController();
    const get = await fetch(url, { headers: auth, signal: reading.signal });
    expect(get.status).toBe(200);
    reading.abort();
  } finally {
    held.open();
    await keyed.close();
  }
});
