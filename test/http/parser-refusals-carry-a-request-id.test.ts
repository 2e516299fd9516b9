/**
 * openapi.yaml, Conventions: "Every response carries `X-Request-Id`". So do the answers to a
 * request Node's HTTP parser refuses (a malformed Content-Length, headers too large), written
 * as raw bytes by clientErrorHandler.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

function rawExchange(request: string): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => socket.end(request));
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.on("close", () => resolve(text));
    socket.on("error", reject);
  });
}

it("a request with a malformed Content-Length gets its 400 with an X-Request-Id", async () => {
  const raw = await rawExchange(
    "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: abc\r\n\r\n{}",
  );
  expect(raw).toMatch(/^HTTP\/1\.1 400 /);
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  expect(head).toMatch(/^x-request-id: \S+$/im);
});

it("a request whose headers are too large gets its 431 with an X-Request-Id", async () => {
  const raw = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nx-pad: ${"a".repeat(20_000)}\r\n\r\n`);
  expect(raw).toMatch(/^HTTP\/1\.1 431 /);
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  expect(head).toMatch(/^x-request-id: \S+$/im);
});
