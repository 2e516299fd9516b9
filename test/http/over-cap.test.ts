/**
 * Past MAX_CONNECTIONS, a few connections (OVER_CAP_SLOTS) are still accepted, each to be
 * answered once and closed: GET /healthz as usual (a liveness probe does not restart a server
 * that is only full), anything else 503 TOO_MANY_CONNECTIONS; one that says nothing is cut at
 * OVER_CAP_DEADLINE_MS. Past those too, a new connection takes the place of the oldest.
 * (The server's own work under such a flood: test/deploy/exhaustion.test.ts.)
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { OVER_CAP_DEADLINE_MS, OVER_CAP_SLOTS } from "../../src/http/connection-cap.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const MAX = 3;
let server: TestServer | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await server?.close();
  server = undefined;
});

interface Exchange {
  /** What the server sent, as text. */
  answer: string;
  /** Whether, and how many ms after connecting, the server closed the connection. */
  closedAfterMs: () => number | null;
  socket: net.Socket;
}

/** Connects and sends `request` (nothing when empty); resolves once connected. */
function exchange(port: number, request = ""): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    sockets.push(socket);
    const started = Date.now();
    let closedAt: number | null = null;
    const result: Exchange = { answer: "", closedAfterMs: () => closedAt, socket };
    socket.on("error", () => {});
    socket.on("data", (chunk) => {
      result.answer += chunk;
    });
    socket.on("close", () => {
      closedAt = Date.now() - started;
    });
    socket.once("connect", () => {
      if (request) socket.write(request);
      resolve(result);
    });
  });
}

const get = (path: string, host = "127.0.0.1") => `GET ${path} HTTP/1.1\r\nhost: ${host}\r\n\r\n`;

/** The status, lower-cased headers and body of a whole HTTP/1.1 answer. */
function parse(answer: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = "", body = ""] = answer.split("\r\n\r\n");
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
  );
  return { status: Number(statusLine.split(" ")[1]), headers, body };
}

/** A server with MAX connections held open by idle clients (timeouts long enough not to cut them). */
async function fullServer(env: Record<string, string> = {}) {
  const { lines, logger } = capturedLogs();
  server = await startTestServer({
    env: { MAX_CONNECTIONS: String(MAX), HEADERS_TIMEOUT_MS: "60000", REQUEST_TIMEOUT_MS: "60000", ...env },
    logger,
  });
  const port = Number(new URL(server.url).port);
  const held = [];
  for (let i = 0; i < MAX; i++) held.push(await exchange(port));
  await connectionsAre(MAX);
  return { port, held, lines };
}

/** Waits until the server holds `n` connections. */
function connectionsAre(n: number): Promise<number> {
  const target = server?.app.server;
  return until(
    () => new Promise<number>((resolve) => target?.getConnections((_err, count) => resolve(count))),
    (count) => count === n,
    `${n} connections held`,
  );
}

/** Resolves once the server has closed `x`'s connection. */
const closed = (x: Exchange) => until(x.closedAfterMs, (ms) => ms !== null, "the connection to close");

describe("connections over MAX_CONNECTIONS", () => {
  it("GET and HEAD /healthz are answered 200 as usual, then the connection is closed", async () => {
    const { port, held } = await fullServer();
    const probe = await exchange(port, get("/healthz"));
    await closed(probe);
    const answer = parse(probe.answer);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ status: "ok" });
    expect(answer.headers.connection).toBe("close");
    const head = await exchange(port, "HEAD /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    await closed(head);
    expect(parse(head.answer).status).toBe(200);
    // The connections under the cap are not touched.
    expect(held.map((h) => h.closedAfterMs())).toEqual([null, null, null]);
  });

  it("any other request gets 503 TOO_MANY_CONNECTIONS with Retry-After and Connection: close, before authentication", async () => {
    const { port } = await fullServer({ AGENT_API_KEYS: "over-cap-key-0123456789" });
    for (const request of [
      get("/sessions"),
      get("/readyz"),
      get("/no/such/route"),
      'POST /sessions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\n\r\n{"',
    ]) {
      const refused = await exchange(port, request);
      await closed(refused);
      const answer = parse(refused.answer);
      expect(answer.status, request).toBe(503);
      expect(answer.headers).toMatchObject({ "retry-after": "5", connection: "close" });
      expect(answer.headers["x-request-id"]).toMatch(/^req_/);
      expect(JSON.parse(answer.body)).toEqual({
        error: {
          code: "TOO_MANY_CONNECTIONS",
          message: "the server holds its maximum of connections at once (MAX_CONNECTIONS); retry later",
        },
      });
    }
  });

  it("a browser can read the refusal: its preflight is answered, and the 503 names its allowed origin and exposes Retry-After", async () => {
    const { port } = await fullServer({ CORS_ORIGINS: "https://app.example" });
    const preflight = await exchange(
      port,
      "OPTIONS /sessions HTTP/1.1\r\nhost: 127.0.0.1\r\norigin: https://app.example\r\n" +
        "access-control-request-method: POST\r\naccess-control-request-headers: content-type\r\n\r\n",
    );
    await closed(preflight);
    const allowed = parse(preflight.answer);
    expect(allowed.status).toBe(204);
    expect(allowed.headers).toMatchObject({
      "access-control-allow-origin": "https://app.example",
      connection: "close",
    });
    const post = (origin: string) =>
      `POST /sessions HTTP/1.1\r\nhost: 127.0.0.1\r\norigin: ${origin}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`;
    const refused = await exchange(port, post("https://app.example"));
    await closed(refused);
    const answer = parse(refused.answer);
    expect(answer.status).toBe(503);
    expect(answer.headers).toMatchObject({ "retry-after": "5", "access-control-allow-origin": "https://app.example" });
    expect(answer.headers["access-control-expose-headers"]).toContain("retry-after");
    // An origin the server does not name gets its 503 without a CORS header (the browser hides it).
    const other = await exchange(port, post("https://elsewhere.example"));
    await closed(other);
    expect(parse(other.answer).status).toBe(503);
    expect(parse(other.answer).headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("a connection accepted over the cap is served as any other once room has come before its request", async () => {
    const { port, held } = await fullServer();
    const waiting = await exchange(port);
    await connectionsAre(MAX + 1);
    // A connection under the cap closes; then the one accepted over it sends its request.
    held[0]?.socket.destroy();
    await connectionsAre(MAX);
    waiting.socket.write(get("/sessions"));
    await until(
      () => waiting.answer,
      (answer) => answer.includes("\r\n\r\n"),
      "an answer",
    );
    const answer = parse(waiting.answer);
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).not.toBe("close");
    // Held past the over-cap deadline, as any connection under the cap.
    await new Promise((resolve) => setTimeout(resolve, OVER_CAP_DEADLINE_MS + 300));
    expect(waiting.closedAfterMs()).toBeNull();
  });

  it("/healthz over the cap still passes the host guard of a server without keys", async () => {
    const { port } = await fullServer();
    const rebinding = await exchange(port, get("/healthz", `rebind.attacker.example:${port}`));
    await closed(rebinding);
    expect(parse(rebinding.answer).status).toBe(403);
    expect(JSON.parse(parse(rebinding.answer).body).error.code).toBe("HOST_NOT_ALLOWED");
  });

  it("a connection over the cap that sends nothing is closed at the deadline, and its slot is free again", async () => {
    const { port, held } = await fullServer();
    const silent = await exchange(port);
    await closed(silent);
    const after = silent.closedAfterMs() ?? 0;
    expect(after).toBeGreaterThanOrEqual(OVER_CAP_DEADLINE_MS - 100);
    expect(after).toBeLessThan(OVER_CAP_DEADLINE_MS + 1000);
    expect(silent.answer).toBe("");
    expect(held.map((h) => h.closedAfterMs())).toEqual([null, null, null]);
    await connectionsAre(MAX);
    const probe = await exchange(port, get("/healthz"));
    await closed(probe);
    expect(parse(probe.answer).status).toBe(200);
  });

  it("once the over-cap slots are taken too, a new connection takes the oldest one's place: a liveness probe is answered however the slots are kept full", async () => {
    const { port, lines } = await fullServer();
    // An attacker holds every over-cap slot, as one reconnecting as fast as it is cut would.
    const extra = [];
    for (let i = 0; i < OVER_CAP_SLOTS; i++) extra.push(await exchange(port));
    await connectionsAre(MAX + OVER_CAP_SLOTS);
    const probe = await exchange(port, get("/healthz"));
    await closed(probe);
    expect(parse(probe.answer).status).toBe(200);
    // The oldest was dropped unanswered to make room, at once; the others are still held.
    await closed(extra[0] as Exchange);
    expect(extra[0]?.answer).toBe("");
    expect(extra[0]?.closedAfterMs()).toBeLessThan(OVER_CAP_DEADLINE_MS / 2);
    expect(extra.slice(1).every((x) => x.closedAfterMs() === null)).toBe(true);
    const warnings = lines
      .map((line) => JSON.parse(line))
      .filter((entry) => /connections over the cap/.test(entry.msg));
    // Logged at once for the first over the cap; the rest are counted for the next warning.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      level: 40 /* warn */,
      port: "PORT",
      overCap: 1,
      dropped: 0,
      maxConnections: MAX,
    });
    // The metrics count every connection over the cap, and the one dropped unanswered.
    const counted = async (name: string) =>
      (await server?.ctx.metrics.registry.getSingleMetric(name)?.get())?.values.map((v) => [v.labels.port, v.value]);
    expect(await counted("agent_connections_over_cap_total")).toEqual([["PORT", OVER_CAP_SLOTS + 1]]);
    expect(await counted("agent_connections_dropped_total")).toEqual([["PORT", 1]]);
  });
});
