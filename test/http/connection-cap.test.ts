/**
 * MAX_CONNECTIONS: the connections the server holds at once, from every client together, stop
 * below the process's open-file limit; past it (and past a few over-cap slots, whose answers
 * test/http/over-cap.test.ts pins) a connection is closed as it is accepted, and what came over
 * the cap is logged, at most once per 10 s. (The attack itself, against a server with few
 * descriptors and a run in flight: test/deploy/exhaustion.test.ts.)
 */
import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config.js";
import { capConnections, DROP_LOG_INTERVAL_MS, METRICS_MAX_CONNECTIONS } from "../../src/http/connection-cap.js";
import { listenForMetrics } from "../../src/http/metrics-server.js";
import { lowOpenFileLimit } from "../../src/key-limits.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { freePort } from "../helpers/child-server.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await server?.close();
  server = undefined;
});

describe("MAX_CONNECTIONS", () => {
  it("is validated like its neighbours and needs no keys", () => {
    const base = { OPENAI_MODEL: "m", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" };
    expect(loadConfig({ ...base, MAX_CONNECTIONS: "500" }, { openFileLimit: 128 }).MAX_CONNECTIONS).toBe(500);
    expect(loadConfig({ ...base, MAX_CONNECTIONS: "0" }, { openFileLimit: 128 }).MAX_CONNECTIONS).toBe(0);
    expect(() => loadConfig({ ...base, MAX_CONNECTIONS: "ten" })).toThrow(/MAX_CONNECTIONS: must be a whole/);
    expect(() => loadConfig({ ...base, MAX_CONNECTIONS: "-1" })).toThrow(/MAX_CONNECTIONS/);
  });

  it("by default leaves a quarter of the open-file limit or, when more, 112 descriptors and 6 for each of MAX_CONCURRENT_RUNS", () => {
    const base = { OPENAI_MODEL: "m", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" };
    const at = (openFileLimit: number | null, runs?: number) =>
      loadConfig(runs === undefined ? base : { ...base, MAX_CONCURRENT_RUNS: String(runs) }, { openFileLimit })
        .MAX_CONNECTIONS;
    // The default 64 runs keep 112 + 64 × 6 = 496 descriptors until a quarter of the limit is more.
    expect([at(1024), at(1856), at(2048), at(4096), at(1_048_576)]).toEqual([528, 1360, 1536, 3072, 786_432]);
    // More runs keep more; fewer never keep less than the quarter.
    expect([at(4096, 1), at(4096, 152), at(4096, 153), at(4096, 200), at(8192, 1000)]).toEqual([
      3072, 3072, 3066, 2784, 2080,
    ]);
    expect([at(1024, 1), at(200, 2), at(128, 2)]).toEqual([768, 76, 32]);
    // A limit the runs' reserve does not leave a quarter of still leaves that quarter to
    // connections (warned at start: lowOpenFileLimit); an unknown one, no cap.
    expect([at(512), at(256), at(464), at(128, 4), at(2, 1)]).toEqual([128, 64, 116, 32, 1]);
    expect(at(null)).toBe(0);
  });

  it("a limit too low for MAX_CONCURRENT_RUNS runs beside a quarter of it for connections is told with what it would take", () => {
    // 64 runs: 112 + 64 × 6 = 496 kept, and a quarter for connections.
    expect(lowOpenFileLimit(512, 64)).toBe(496 + 128);
    expect(lowOpenFileLimit(256, 64)).toBe(496 + 64);
    expect(lowOpenFileLimit(1024, 64)).toBeNull();
    expect(lowOpenFileLimit(256, 2)).toBeNull();
    expect(lowOpenFileLimit(128, 2)).toBe(124 + 32);
    expect(lowOpenFileLimit(null, 64)).toBeNull();
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

  it("connections over the cap are logged at once, then at most once per interval with how many there were and were dropped", () => {
    vi.useFakeTimers();
    const warnings: { overCap: number; dropped: number }[] = [];
    const log = { warn: (fields: object) => warnings.push(fields as { overCap: number; dropped: number }) };
    const target = new net.Server();
    const overCap = capConnections(target, 1, log, { overCapSlots: 2 });
    // Node drops what comes past the cap and the over-cap slots together, but one: that one
    // reaches the handler, which drops the oldest over the cap to make room for it.
    expect(target.maxConnections).toBe(4);
    const sockets = [new net.Socket(), new net.Socket(), new net.Socket(), new net.Socket()];
    for (const socket of sockets) target.emit("connection", socket);
    expect(sockets.map(overCap)).toEqual([false, false, true, true]);
    expect(sockets.map((s) => s.destroyed)).toEqual([false, true, false, false]);
    for (let i = 0; i < 3; i++) target.emit("drop");
    expect(warnings.map((w) => [w.overCap, w.dropped])).toEqual([[1, 0]]);
    vi.advanceTimersByTime(DROP_LOG_INTERVAL_MS);
    // Since the first: the other two over the cap and the three Node dropped; four dropped
    // (the oldest made room for the newest, and Node's three).
    expect(warnings.map((w) => [w.overCap, w.dropped])).toEqual([
      [1, 0],
      [5, 4],
    ]);
    // A quiet interval logs nothing; the next drop is logged at once again.
    vi.advanceTimersByTime(DROP_LOG_INTERVAL_MS * 3);
    expect(warnings).toHaveLength(2);
    target.emit("drop");
    expect(warnings.map((w) => [w.overCap, w.dropped])).toEqual([
      [1, 0],
      [5, 4],
      [1, 1],
    ]);
  });

  it("0 is no cap: nothing is set or listened to", () => {
    const target = new net.Server();
    const before = target.maxConnections;
    const overCap = capConnections(target, 0, { warn: () => {} }, { overCapSlots: 16 });
    expect(target.maxConnections).toBe(before);
    expect(target.listenerCount("drop")).toBe(0);
    expect(target.listenerCount("connection")).toBe(0);
    expect(overCap(new net.Socket())).toBe(false);
  });
});
