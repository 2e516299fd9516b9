import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/**
 * Sends `head` (and `body`) on a raw connection and reads until the server closes it; resolves
 * with what came and how long the close took after the stream's last frame.
 */
function exchange(head: string, body: string): Promise<{ text: string; closeAfterEndMs: number }> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(server.url);
    const socket = connect({ host: "127.0.0.1", port: Number(port) });
    let text = "";
    let endedAt: number | null = null;
    socket.setEncoding("utf8");
    socket.on("data", (part) => {
      text += part;
      if (endedAt === null && text.includes("event: run.finished")) endedAt = performance.now();
    });
    socket.on("error", reject);
    socket.on("close", () => resolve({ text, closeAfterEndMs: performance.now() - (endedAt ?? Number.NaN) }));
    socket.write(head + body);
  });
}

it("a stream asked for with Connection: close is answered so, and its connection closes with the stream's end", async () => {
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const body = JSON.stringify({ input: "hello" });
  const { text, closeAfterEndMs } = await exchange(
    `POST /sessions/${session.id}/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    body,
  );
  const head = text.slice(0, text.indexOf("\r\n\r\n")).toLowerCase();
  expect(head).toMatch(/^http\/1\.1 200/);
  expect(head).toContain("connection: close");
  expect(head).not.toContain("keep-alive");
  expect(text).toContain("event: run.finished");
  // Not left open for the keep-alive timeout: a client reading to the close gets its end now.
  expect(closeAfterEndMs).toBeLessThan(1_000);
});

it("a stream on a keep-alive connection keeps it open for the next request", async () => {
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" } })).body
    .run;
  const { port } = new URL(server.url);
  const socket = connect({ host: "127.0.0.1", port: Number(port) });
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (part) => (text += part));
  socket.write(`GET /runs/${run.id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`);
  await expect.poll(() => text.includes("0\r\n\r\n"), { timeout: 5_000 }).toBe(true);
  expect(text.slice(0, text.indexOf("\r\n\r\n")).toLowerCase()).toContain("connection: keep-alive");
  socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  await expect.poll(() => /HTTP\/1\.1 200 OK[\s\S]*HTTP\/1\.1 200/.test(text), { timeout: 5_000 }).toBe(true);
  socket.destroy();
});
