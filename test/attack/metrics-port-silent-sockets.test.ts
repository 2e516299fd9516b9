/**
 * METRICS_PORT is served without keys and holds at most 16 connections, refusing (resetting)
 * every new one past them. Its server had none of the timeouts PORT has (HEADERS_TIMEOUT_MS,
 * REQUEST_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS): Node's defaults applied (60 s for headers,
 * checked every 30 s). Any client that reached the port opened 16 sockets that send nothing and
 * every Prometheus scrape was reset (reconnecting as each was cut kept the scraper out). Now
 * the port has PORT's timeouts: the silent sockets are cut after HEADERS_TIMEOUT_MS.
 */
import http from "node:http";
import net from "node:net";
import { afterEach, expect, it } from "vitest";
import { listenForMetrics } from "../../src/http/metrics-server.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { freePort } from "../helpers/child-server.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY = "key-a-0123456789abcdef";
let server: TestServer | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await server?.close();
  server = undefined;
});

it("16 silent sockets do not keep Prometheus off the metrics port past the header timeout", async () => {
  const port = await freePort();
  server = await startTestServer({
    env: { AGENT_API_KEYS: KEY, METRICS_PORT: String(port), HEADERS_TIMEOUT_MS: "1000", REQUEST_TIMEOUT_MS: "2000" },
  });
  const metrics = await listenForMetrics(server.ctx, capturedLogs().logger);
  try {
    // A scraper's fresh connection (Prometheus after a restart, or once its idle one was closed).
    const scrape = () =>
      new Promise<number | string>((resolve) => {
        const req = http.get({ host: "127.0.0.1", port, path: "/metrics", agent: false }, (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        });
        req.on("error", (err) => resolve(`failed: ${err.message}`));
      });
    expect(await scrape()).toBe(200);
    // The attacker: 16 connections that never send a byte.
    for (let i = 0; i < 16; i++) {
      const socket = net.connect(port, "127.0.0.1");
      socket.on("error", () => {});
      // Read what comes (a 408, the end), so that a socket the server cut is seen ended.
      socket.resume();
      await new Promise((resolve) => socket.once("connect", resolve));
      sockets.push(socket);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Past HEADERS_TIMEOUT_MS (1 s, checked every second).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const open = sockets.filter((s) => !s.destroyed && !s.readableEnded).length;
    expect([open, await scrape()]).toEqual([0, 200]);
  } finally {
    await metrics?.close();
  }
});
