/**
 * ALLOWED_HOSTS takes any text and silently ignores entries that can never match a request's
 * Host: a URL (`https://app.internal`, the form CORS_ORIGINS asks for right next to it) or a
 * wildcard for subdomains (`*.example.com`, as `*.localhost` is described beside it, and the
 * form other servers' allowed-host lists take). The server starts as if they were not there,
 * and every request a client sends for `app.internal` or `api.example.com` is refused
 * 403 HOST_NOT_ALLOWED with "add the name to ALLOWED_HOSTS" — which the operator did.
 *
 * README (Configuration): "A bad value stops the server with exit code 2 and a message naming
 * the variable"; ALLOWED_HOSTS: "host names a request's Host may name ... comma-separated
 * (`*`: any)". CORS_ORIGINS, the list beside it, names an entry that is not an origin.
 * Expected: each entry either works as written (the URL's host, the subdomains) or the
 * configuration is refused naming ALLOWED_HOSTS and the entry; never silently ignored.
 */
import http from "node:http";
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

function statusForHost(url: string, host: string): Promise<number> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port, method: "GET", path: "/sessions", headers: { host } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

let server: TestServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

it("ALLOWED_HOSTS entries written as a URL or as *.domain are honoured or refused at start, never silently ignored", async () => {
  let refusal: string | null = null;
  try {
    server = await startTestServer({ env: { ALLOWED_HOSTS: "https://app.internal, *.example.com" } });
  } catch (err) {
    refusal = (err as Error).message;
  }
  if (refusal !== null) {
    expect(refusal).toMatch(/ALLOWED_HOSTS/);
    return;
  }
  const live = server as TestServer;
  // Sanity: a name not listed at all is refused (the guard is on).
  expect(await statusForHost(live.url, "rebind.attacker.example")).toBe(403);
  expect({
    "app.internal": await statusForHost(live.url, "app.internal"),
    "api.example.com": await statusForHost(live.url, "api.example.com"),
  }).toEqual({ "app.internal": 200, "api.example.com": 200 });
});

it("an ALLOWED_HOSTS entry *.example.com serves the names under example.com only, never example.com.evil.net", async () => {
  server = await startTestServer({ env: { ALLOWED_HOSTS: "*.example.com" } });
  expect({
    "a.b.example.com": await statusForHost(server.url, "a.b.example.com:3000"),
    "example.com": await statusForHost(server.url, "example.com"),
    "example.com.evil.net": await statusForHost(server.url, "example.com.evil.net"),
    "evilexample.com": await statusForHost(server.url, "evilexample.com"),
  }).toEqual({ "a.b.example.com": 200, "example.com": 403, "example.com.evil.net": 403, "evilexample.com": 403 });
});
