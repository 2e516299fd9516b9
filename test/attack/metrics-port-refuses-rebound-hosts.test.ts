/**
 * METRICS_PORT serves GET /metrics without keys on HOST (127.0.0.1 by default). PORT, when it
 * serves without keys, refuses a request naming a host other than an IP, localhost, HOST or
 * ALLOWED_HOSTS (403 HOST_NOT_ALLOWED): that is what a page using DNS rebinding sends. The
 * metrics port, keyless always, lets such a page in the operator's browser read the metrics.
 */
import http from "node:http";
import { afterEach, expect, it } from "vitest";
import type { App } from "../../src/app-context.js";
import { listenForMetrics } from "../../src/http/metrics-server.js";
import { createLogger } from "../../src/logger.js";
import { freePort } from "../helpers/child-server.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
let metricsApp: App | null = null;
afterEach(async () => {
  await metricsApp?.close();
  metricsApp = null;
  await server?.close();
  server = undefined;
});

/** GET `path` on 127.0.0.1:`port` naming `host` in the Host header (as a rebound page's request does). */
function getWithHost(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method: "GET", path, headers: { host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

it("the metrics port refuses a request naming a host a DNS-rebinding page would send", async () => {
  const metricsPort = await freePort();
  server = await startTestServer({ env: { METRICS_PORT: String(metricsPort), HOST: "127.0.0.1" } });
  metricsApp = await listenForMetrics(server.ctx, createLogger({ level: "silent" }));
  const port = Number(new URL(server.url).port);

  // PORT, keyless, refuses the rebound name...
  const onPort = await getWithHost(port, "/sessions", `rebind.attacker.example:${port}`);
  expect(onPort.status).toBe(403);
  // ...and the metrics port still answers its own address.
  expect((await getWithHost(metricsPort, "/metrics", `127.0.0.1:${metricsPort}`)).status).toBe(200);

  const rebound = await getWithHost(metricsPort, "/metrics", `rebind.attacker.example:${metricsPort}`);
  expect(rebound.body).not.toContain("agent_runs_started_total");
  expect(rebound.status).toBe(403);
  expect(JSON.parse(rebound.body).error.code).toBe("HOST_NOT_ALLOWED");
});

it("the metrics port's refusal says what is true when the API port has keys: that port, not the server, takes none", async () => {
  const metricsPort = await freePort();
  server = await startTestServer({
    env: { METRICS_PORT: String(metricsPort), HOST: "127.0.0.1", AGENT_API_KEYS: "key-metrics-0123456789abcdef" },
  });
  metricsApp = await listenForMetrics(server.ctx, createLogger({ level: "silent" }));
  const rebound = await getWithHost(metricsPort, "/metrics", `rebind.attacker.example:${metricsPort}`);
  expect(rebound.status).toBe(403);
  const { message } = JSON.parse(rebound.body).error;
  expect(message).not.toContain("this server has no API keys");
  expect(message).toContain("METRICS_PORT");
  expect(message).toContain("ALLOWED_HOSTS");
});

it("the metrics port answers a path it does not serve with the API's error envelope (404 NOT_FOUND)", async () => {
  const metricsPort = await freePort();
  server = await startTestServer({ env: { METRICS_PORT: String(metricsPort), HOST: "127.0.0.1" } });
  metricsApp = await listenForMetrics(server.ctx, createLogger({ level: "silent" }));
  const answer = await getWithHost(metricsPort, "/sessions", `127.0.0.1:${metricsPort}`);
  expect(answer.status).toBe(404);
  expect(JSON.parse(answer.body)).toEqual({ error: { code: "NOT_FOUND", message: "no route GET /sessions" } });
});
