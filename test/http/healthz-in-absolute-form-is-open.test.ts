/**
 * `/healthz` and `/readyz` are open with AGENT_API_KEYS set (load balancers, liveness probes).
 * HTTP/1.1 lets a request name its target in absolute form (`GET http://host:port/healthz`,
 * RFC 9112 3.2.2: a server MUST accept it; probes and clients behind forward proxies send it).
 * The router takes such a request to the /healthz route, yet the authentication hook decides
 * openness on the raw request target (`request.url`), not on the route: the probe is refused
 * 401, and a server behind such a probe is restarted as dead. Sent here as raw bytes.
 * Openness follows the matched route: a request no route takes is not open, whatever its path.
 */
import net from "node:net";
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY = "key-a-0123456789abcdef";
let server: TestServer;
afterEach(async () => {
  await server?.close();
});

function rawGet(port: number, target: string, extra = "", method = "GET"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(`${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra}Connection: close\r\n\r\n`);
    });
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => {
      text += chunk;
    });
    socket.on("error", reject);
    socket.on("close", () =>
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]),
        body: text.slice(text.indexOf("\r\n\r\n") + 4),
      }),
    );
  });
}

it("GET /healthz in absolute form is answered as in origin form, without a key", async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: KEY } });
  const port = Number(new URL(server.url).port);
  const origin = `http://127.0.0.1:${port}`;
  // The absolute form is routed: with the key, `GET http://.../sessions` is the session list.
  const listed = await rawGet(port, `${origin}/sessions`, `Authorization: Bearer ${KEY}\r\n`);
  expect(listed.status).toBe(200);
  expect(JSON.parse(listed.body)).toEqual({ items: [], nextCursor: null });
  // Origin form: open.
  expect((await rawGet(port, "/healthz")).status).toBe(200);
  // Absolute form: the same route, the same answer.
  const absolute = await rawGet(port, `${origin}/healthz`);
  expect([absolute.status, absolute.body]).toEqual([200, JSON.stringify({ status: "ok" })]);
  const ready = await rawGet(port, `${origin}/readyz`);
  expect(ready.status).toBe(200);
});

it("a request no route takes is not open, even on an open route's path", async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: KEY } });
  const port = Number(new URL(server.url).port);
  // No route takes POST /healthz: it is refused for want of a key, as any unmatched request is.
  const posted = await rawGet(port, "/healthz", "", "POST");
  expect([posted.status, JSON.parse(posted.body).error.code]).toEqual([401, "UNAUTHORIZED"]);
  const absolute = await rawGet(port, `http://127.0.0.1:${port}/healthz`, "", "POST");
  expect(absolute.status).toBe(401);
});
