import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** A raw request with a chosen Host header (fetch does not let a caller set Host). */
function requestWithHost(
  url: string,
  {
    method,
    path,
    host,
    body,
    headers = {},
  }: { method: string; path: string; host: string; body?: unknown; headers?: Record<string, string> },
): Promise<{ status: number; body: string }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        headers: { host, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe("DNS rebinding against a server without API keys (the default on 127.0.0.1)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { ALLOWED_HOSTS: "devbox.internal" } });
  });
  afterAll(() => server.close());

  it("refuses a request whose Host is a name that is not this server's (a rebinding page's own name)", async () => {
    // The page on http://rebind.attacker.example:PORT re-pointed its name at 127.0.0.1: the browser
    // now treats the server as that page's own origin and sends its name as Host.
    const host = `rebind.attacker.example:${new URL(server.url).port}`;
    const create = await requestWithHost(server.url, {
      method: "POST",
      path: "/sessions",
      host,
      body: { approval: { default: "allow" } },
    });
    expect(create.status).toBe(403);
    expect(JSON.parse(create.body).error.code).toBe("HOST_NOT_ALLOWED");
    const list = await requestWithHost(server.url, { method: "GET", path: "/sessions", host });
    expect(list.status).toBe(403);
    const preflight = await requestWithHost(server.url, {
      method: "OPTIONS",
      path: "/sessions",
      host,
      headers: { origin: `http://${host}`, "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(403);
  });

  it("still serves the names a local client uses: localhost, IP literals, HOST, ALLOWED_HOSTS", async () => {
    const port = new URL(server.url).port;
    for (const host of [
      `localhost:${port}`,
      `LOCALHOST.:${port}`,
      `app.localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      `devbox.internal:${port}`,
    ]) {
      const res = await requestWithHost(server.url, { method: "GET", path: "/sessions", host });
      expect(res.status, host).toBe(200);
    }
  });
});

describe("with API keys", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: "key-aaaaaaaaaaaaaaaaaaaa" } });
  });
  afterAll(() => server.close());

  it("answers any Host (a rebinding page has no key)", async () => {
    const res = await requestWithHost(server.url, {
      method: "GET",
      path: "/sessions",
      host: "api.example.com",
      headers: { authorization: "Bearer key-aaaaaaaaaaaaaaaaaaaa" },
    });
    expect(res.status).toBe(200);
  });
});
