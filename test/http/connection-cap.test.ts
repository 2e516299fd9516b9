/**
 * MAX_CONNECTIONS: the connections the server holds at once, from every client together, stop
 * below the process's open-file limit; past it a connection is closed as it is accepted, and the
 * drops are logged, at most once per 10 s. (The attack itself, against a server with few
 * descriptors and a run in flight: test/deploy/exhaustion.test.ts.)
 */
import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config.js";
import { capConnections, DROP_LOG_INTERVAL_MS, METRICS_MAX_CONNECTIONS } from "../../src/http/connection-cap.js";
import { listenForMetrics } from "../../src/http/metrics-server.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { freePort } from "../helpers/child-server.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const socket of sockets.splice(0)) socket.destroy();
  await server?.close();
  server = undefined;
});

/** A socket that connects and says nothing; `closed` is set when the server closes it. */
function idleSocket(port: number): Promise<{ socket: net.Socket; closed: () => boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    sockets.push(socket);
    let closed = false;
    socket.on("error", () => {});
    socket.on("close", () => {
      closed = true;
    });
    socket.once("connect", () => resolve({ socket, closed: () => closed }));
  });
}

/** GET /healthz on a connection of its own: its status, or the error's code. */
const healthz = (port: number) =>
  new Promise<number | string>((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/healthz", agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", (err) => resolve((err as NodeJS.ErrnoException).code ?? err.message));
  });

describe("MAX_CONNECTIONS", () => {
  it("is validated like its neighbours, needs no keys, and leaves a quarter of the open-file limit (at least 64) by default", () => {
    const base = { OPENAI_MODEL: "m", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" };
    const at = (openFileLimit: number | null) => loadConfig(base, { openFileLimit }).MAX_CONNECTIONS;
    expect([at(128), at(256), at(1024), at(4096), at(1_048_576)]).toEqual([64, 192, 768, 3072, 786_432]);
    expect([at(64), at(2)]).toEqual([1, 1]);
    expect(at(null)).toBe(0);
    expect(loadConfig({ ...base, MAX_CONNECTIONS: "500" }, { openFileLimit: 128 }).MAX_CONNECTIONS).toBe(500);
    expect(loadConfig({ ...base, MAX_CONNECTIONS: "0" }, { openFileLimit: 128 }).MAX_CONNECTIONS).toBe(0);
    expect(() => loadConfig({ ...base, MAX_CONNECTIONS: "ten" })).toThrow(/MAX_CONNECTIONS: must be a whole/);
    expect(() => loadConfig({ ...base, MAX_CONNECTIONS: "-1" })).toThrow(/MAX_CONNECTIONS/);
  });

  it("past the cap a connection is closed unanswered and the drop logged; one closing makes room for /healthz", async () => {
    const { lines, logger } = capturedLogs();
    server = await startTestServer({ env: { MAX_CONNECTIONS: "3" }, logger });
    const port = Number(new URL(server.url).port);
    expect(server.app.server.maxConnections).toBe(3);
    const held = [await idleSocket(port), await idleSocket(port), await idleSocket(port)];
    const dropped = await idleSocket(port);
    await until(dropped.closed, Boolean, "the fourth connection to be closed");
    expect(await healthz(port)).toBe("ECONNRESET");
    expect(held.map((h) => h.closed())).toEqual([false, false, false]);
    const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => /connections dropped/.test(entry.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40 /* warn */, port: "PORT", dropped: 1, maxConnections: 3 });
    held[0]?.socket.destroy();
    await until(
      () => healthz(port),
      (status) => status === 200,
      "/healthz once a connection closed",
    );
  });

  it("the metrics port holds at most 16 connections of its own, fewer under a lower MAX_CONNECTIONS", async () => {
    for (const [max, expected] of [
      ["1000", METRICS_MAX_CONNECTIONS],
      ["5", 5],
    ] as const) {
      server = await startTestServer({ env: { MAX_CONNECTIONS: max, METRICS_PORT: String(await freePort()) } });
      const metrics = await listenForMetrics(server.ctx, capturedLogs().logger);
      expect(metrics?.server.maxConnections).toBe(expected);
      await metrics?.close();
      await server.close();
      server = undefined;
    }
  });

  it("drops are logged at once, then at most once per interval with how many there were", () => {
    vi.useFakeTimers();
    const warnings: { dropped: number }[] = [];
    const log = { warn: (fields: object) => warnings.push(fields as { dropped: number }) };
    const target = new net.Server();
    capConnections(target, 1, log);
    expect(target.maxConnections).toBe(1);
    for (let i = 0; i < 5; i++) target.emit("drop");
    expect(warnings.map((w) => w.dropped)).toEqual([1]);
    vi.advanceTimersByTime(DROP_LOG_INTERVAL_MS);
    expect(warnings.map((w) => w.dropped)).toEqual([1, 4]);
    // A quiet interval logs nothing; the next drop is logged at once again.
    vi.advanceTimersByTime(DROP_LOG_INTERVAL_MS * 3);
    expect(warnings).toHaveLength(2);
    target.emit("drop");
    expect(warnings.map((w) => w.dropped)).toEqual([1, 4, 1]);
  });

  it("0 is no cap: nothing is set or listened to", () => {
    const target = new net.Server();
    const before = target.maxConnections;
    capConnections(target, 0, { warn: () => {} });
    expect(target.maxConnections).toBe(before);
    expect(target.listenerCount("drop")).toBe(0);
  });
});
