/**
 * README (Security, "All connections together"): "The metrics port (`METRICS_PORT`) holds at
 * most 16 of its own and drops the rest"; the MAX_CONNECTIONS row: "`METRICS_PORT` holds at
 * most 16". The metrics port takes no API keys, so whoever reaches it must not be able to hold
 * descriptors without bound. With MAX_CONNECTIONS=0 (no cap on PORT, which the README offers
 * for operators who size the limit themselves) the metrics port is left uncapped too.
 */
import { connect, type Socket } from "node:net";
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { freePort, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Sends a whole GET /metrics on a fresh connection; what came back before the connection ended. */
function scrape(port: number): Promise<string> {
  return new Promise((resolve) => {
    let answer = "";
    const socket = connect(port, "127.0.0.1", () =>
      socket.write("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    );
    socket.on("data", (d) => {
      answer += d;
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve(answer));
  });
}

it("with MAX_CONNECTIONS=0 the keyless metrics port still holds at most 16 connections: a 17th is dropped, not served", async () => {
  const temp = tempDir("review-config-metrics-cap-");
  cleanups.push(temp.cleanup);
  const upstream: FakeUpstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const metricsPort = await freePort();
  const server = await startChildServer({
    dir: temp.path,
    upstreamURL: upstream.baseURL,
    env: {
      METRICS_PORT: String(metricsPort),
      MAX_CONNECTIONS: "0",
      // Idle connections are not cut while the test holds them.
      HEADERS_TIMEOUT_MS: "240000",
      REQUEST_TIMEOUT_MS: "240000",
    },
  });
  cleanups.push(async () => {
    server.process.kill("SIGKILL");
    await server.exited;
  });
  const held: Socket[] = [];
  cleanups.push(() => {
    for (const socket of held) socket.destroy();
  });
  // Sixteen connections that say nothing, accepted by the server in the order they came.
  for (let i = 0; i < 16; i++) held.push(await open(metricsPort));
  const answer = await scrape(metricsPort);
  expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
});
