/**
 * Answers their clients do not take (RESPONSE_WRITE_TIMEOUT_MS), as an attacker leaves them:
 * connections that ask for the largest JSON answer the API gives (a session whose system
 * prompt is all control characters, six bytes each as JSON: about 1 MiB), several pipelined
 * on each connection, and never read. Before, every one of those answers was prepared at once
 * and kept in the server's memory, and the connection open, for good (4 connections sending
 * 300 such requests each held 1.36 GB). Now a connection's pipelined requests are answered one
 * at a time, and a connection whose answer has not moved for the deadline is cut. What must
 * not be cut: a client that keeps reading, event streams (idle, or with a watcher that stopped
 * reading: the feed handles that), `?wait=true` waits, and bodies being uploaded.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAwaitingApproval, withKey } from "../helpers/awaiting-approval.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { openSse } from "../helpers/sse-client.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY = "key-a-0123456789abcdef";
const asKey = { authorization: `Bearer ${KEY}` };

/** The bytes of the largest answer as JSON: 172,000 control characters fill a 1 MiB request body (escaped). */
const SYSTEM = "\u0001".repeat(172_000);

interface Served {
  server: TestServer;
  port: number;
  lines: string[];
  /** The session whose GET answers about 1 MiB. */
  sessionId: string;
  /** The times the store read a session: one per GET /sessions/{id} handled. */
  sessionReads: () => number;
  /** The server's side of the connection from the client's local port `port`. */
  serverSide: (port: number) => net.Socket | undefined;
}

const sockets: net.Socket[] = [];

/** A server with RESPONSE_WRITE_TIMEOUT_MS `timeoutMs`; each session read waits `readDelayMs` first. */
async function serve(timeoutMs: number, env: Record<string, string> = {}, readDelayMs = 0): Promise<Served> {
  const { lines, logger } = capturedLogs();
  let reads = 0;
  const server = await startTestServer({
    env: { AGENT_API_KEYS: KEY, RESPONSE_WRITE_TIMEOUT_MS: String(timeoutMs), ...env },
    logger,
    wrapStore: (store) =>
      aroundStore(store, "sessions", (name, _args, call) => {
        if (name !== "get") return call();
        reads++;
        if (readDelayMs === 0) return call();
        return new Promise((resolve) => setTimeout(resolve, readDelayMs)).then(call);
      }),
  });
  const bySourcePort = new Map<number, net.Socket>();
  server.app.server.on("connection", (socket: net.Socket) => {
    if (socket.remotePort !== undefined) bySourcePort.set(socket.remotePort, socket);
  });
  const created = await server.request("POST", "/sessions", { body: { system: SYSTEM }, headers: asKey });
  expect(created.status).toBe(201);
  return {
    server,
    port: Number(new URL(server.url).port),
    lines,
    sessionId: created.body.id,
    sessionReads: () => reads,
    serverSide: (port) => bySourcePort.get(port),
  };
}

/** GET /sessions/{id} `times` over, as one write (pipelined). */
const pipelined = (sessionId: string, times: number) =>
  `GET /sessions/${sessionId} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${KEY}\r\n\r\n`.repeat(times);

/** A connection that sends `request` and then reads nothing; resolves with it connected. */
function neverReading(port: number, request: string): Promise<net.Socket> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    sockets.push(socket);
    socket.on("error", () => {});
    socket.once("connect", () => {
      socket.pause();
      socket.write(request);
      resolve(socket);
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterAll(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

describe("an answer the client does not take is cut after RESPONSE_WRITE_TIMEOUT_MS", () => {
  const TIMEOUT_MS = 500;
  let s: Served;
  beforeAll(async () => {
    s = await serve(TIMEOUT_MS);
  });
  afterAll(() => s?.server.close());

  it("connections that pipeline requests for the largest answer and read nothing are cut once their answer stops moving, and logged with a count", async () => {
    const started = Date.now();
    const attackers = await Promise.all(
      Array.from({ length: 10 }, () => neverReading(s.port, pipelined(s.sessionId, 6))),
    );
    const serverSides = await until(
      () => attackers.map((a) => s.serverSide(a.localPort as number)),
      (sides) => sides.every((side) => side !== undefined),
      "the server's side of every connection",
    );
    // Every one of them is closed by the server (its socket destroyed, what it held freed).
    await until(
      () => serverSides.filter((side) => side?.destroyed).length,
      (closed) => closed === attackers.length,
      "the server to cut every connection that does not read",
    );
    // Not before the deadline.
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS);
    const health = await fetch(`${s.server.url}/healthz`);
    expect(health.status).toBe(200);
    const warnings = s.lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg?.startsWith("answers cut"));
    // At once for the first cut, then at most every 10 s with how many there were since.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, cut: 1, responseWriteTimeoutMs: TIMEOUT_MS });
  });

  it("a connection that pipelines 300 requests and reads nothing gets one answer prepared at a time, not 300 held in memory", async () => {
    const before = s.sessionReads();
    const attacker = await neverReading(s.port, pipelined(s.sessionId, 300));
    const side = await until(
      () => s.serverSide(attacker.localPort as number),
      (found) => found !== undefined,
      "the server's side of the connection",
    );
    await until(
      () => side?.destroyed,
      (destroyed) => destroyed === true,
      "the connection to be cut",
    );
    await sleep(200);
    // The answers the system's socket buffers took whole, and the one that stalled; the
    // requests waiting behind it were dropped with the connection, never handled.
    const handled = s.sessionReads() - before;
    expect(handled).toBeGreaterThanOrEqual(1);
    expect(handled).toBeLessThan(20);
  });

  it("an event stream is not cut: one idle on a run awaiting approval gets the run's end after several deadlines", async () => {
    const { runId } = await runAwaitingApproval(withKey(s.server, KEY));
    const stream = await openSse(`${s.server.url}/runs/${runId}/events`, { headers: asKey });
    await stream.waitFor((e) => e.event === "approval.requested");
    await sleep(TIMEOUT_MS * 4);
    s.server.upstream.enqueue({ text: "done" });
    const decided = await s.server.request("POST", `/runs/${runId}/approvals/call_w`, {
      body: { decision: "approve" },
      headers: asKey,
    });
    expect(decided.status).toBe(200);
    const events = await stream.ended;
    expect(events.at(-1)?.event).toBe("run.finished");
    expect(stream.complete()).toBe(true);
  });

  it("a ?wait=true start whose run lasts several deadlines is answered", async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    s.server.upstream.enqueue({ text: ["slow ", "answer"], gate });
    const session = (await s.server.request("POST", "/sessions", { body: {}, headers: asKey })).body;
    const waiting = s.server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "take your time" },
      headers: asKey,
    });
    await sleep(TIMEOUT_MS * 4);
    release();
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body.run.status).toBe("finished");
    expect(answer.body.text).toBe("slow answer");
  });

  it("a body uploaded slowly over several deadlines is received (REQUEST_TIMEOUT_MS bounds it, not this)", async () => {
    const body = Buffer.from(JSON.stringify({ metadata: { note: "n".repeat(200) } }));
    const socket = net.connect(s.port, "127.0.0.1");
    sockets.push(socket);
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk;
    });
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(
      `POST /sessions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${KEY}\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
    );
    const pieces = 10;
    const size = Math.ceil(body.length / pieces);
    for (let i = 0; i < pieces; i++) {
      await sleep((TIMEOUT_MS * 3) / pieces);
      socket.write(body.subarray(i * size, (i + 1) * size));
    }
    await until(
      () => answer,
      (text) => text.includes("\r\n\r\n"),
      "the answer",
    );
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
  });
});

describe("a client that keeps reading is not cut", () => {
  // As short as the first group's: an event stream is never cut for its watcher's pace, so this
  // only sets how long "several deadlines" (below) is.
  const TIMEOUT_MS = 500;
  let s: Served;
  beforeAll(async () => {
    // A model reply of 8 MB is allowed (the stream below carries one).
    s = await serve(TIMEOUT_MS, { MODEL_MAX_OUTPUT_CHARS: "20000000" });
  });
  afterAll(() => s?.server.close());

  it("an event stream whose watcher stops reading while its run streams megabytes is not cut, and gets every event once it reads again", async () => {
    // 4,000 text deltas of 2 KB: about 8 MB of frames, more than the system's buffers take.
    s.server.upstream.enqueue({ text: Array.from({ length: 4000 }, (_, i) => `${i}`.padEnd(2000, "t")) });
    const session = (await s.server.request("POST", "/sessions", { body: {}, headers: asKey })).body;
    const run = (
      await s.server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "stream" }, headers: asKey })
    ).body;
    const watcher = await neverReading(
      s.port,
      `GET /runs/${run.id}/events HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nauthorization: Bearer ${KEY}\r\n\r\n`,
    );
    const side = await until(
      () => s.serverSide(watcher.localPort as number),
      (found) => found !== undefined,
      "the server's side of the stream",
    );
    await until(
      async () => (await s.server.request("GET", `/runs/${run.id}`, { headers: asKey })).body.status,
      (status) => status === "finished",
      "the run to finish",
    );
    // The stream holds bytes its watcher does not take, for several deadlines.
    await until(
      () => side?.writableLength ?? 0,
      (held) => held > 0,
      "bytes held for the watcher",
    );
    await sleep(TIMEOUT_MS * 3);
    expect(side?.destroyed).toBe(false);
    let text = "";
    watcher.on("data", (chunk) => {
      text += chunk;
    });
    watcher.resume();
    await until(
      () => text,
      (t) => t.includes("event: run.finished"),
      "the run's end on the stream",
    );
    expect(text.match(/^event: text\.delta$/gm)?.length).toBe(4000);
  }, 30_000);
});

/**
 * The whole answers in `bytes` (status and body, by Content-Length), in order, and the bytes
 * they take; a partial last one left out.
 */
function answersIn(bytes: Buffer): { answers: { status: number; body: string }[]; used: number } {
  const answers: { status: number; body: string }[] = [];
  let at = 0;
  for (;;) {
    const headEnd = bytes.indexOf("\r\n\r\n", at);
    if (headEnd < 0) return { answers, used: at };
    const head = bytes.subarray(at, headEnd).toString();
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
    if (bytes.length < headEnd + 4 + length) return { answers, used: at };
    answers.push({
      status: Number(head.split(" ")[1]),
      body: bytes.subarray(headEnd + 4, headEnd + 4 + length).toString(),
    });
    at = headEnd + 4 + length;
  }
}

describe("a client that keeps reading slowly is not cut", () => {
  // The deadline is on progress, not on the whole exchange: 20 answers, each prepared 300 ms
  // after the one before has gone (a slow handler), take more than the deadline in all,
  // while the client, pausing 1 ms after each chunk it reads, keeps taking what it was sent.
  // It keeps up with the answers even slowed many times by a loaded machine, so the system's
  // buffers (several MB on loopback, which the server only sees drain in large steps, about a
  // third of its send buffer at a time) never stay full for anywhere near the deadline. (With
  // a 5 ms pause, a CI run under full load once read slower than those steps need, ~270 KB/s
  // for this 5 s deadline, and was cut.) An exchange cut at the deadline (a limit on the
  // whole, not on progress) fails it.
  const TIMEOUT_MS = 5000;
  let s: Served;
  beforeAll(async () => {
    s = await serve(TIMEOUT_MS, {}, 300);
  });
  afterAll(() => s?.server.close());

  it("one taking 20 pipelined answers of 1 MiB a piece, for longer than the deadline in all, gets every one whole", async () => {
    const answers = 20;
    const socket = net.connect(s.port, "127.0.0.1");
    sockets.push(socket);
    // The whole answers read so far, taken out of the bytes as they come: keeping all 20 MiB
    // and joining it again at every chunk (gigabytes copied, in the server's process) slowed
    // the reader itself past its 1 ms pause on a loaded machine.
    const received: { status: number; body: string }[] = [];
    let unparsed = Buffer.alloc(0);
    let closed = false;
    socket.on("close", () => {
      closed = true;
    });
    socket.on("error", () => {});
    socket.on("data", (chunk: Buffer) => {
      unparsed = Buffer.concat([unparsed, chunk]);
      const { answers, used } = answersIn(unparsed);
      received.push(...answers);
      unparsed = unparsed.subarray(used);
      socket.pause();
      setTimeout(() => socket.resume(), 1);
    });
    await new Promise((resolve) => socket.once("connect", resolve));
    const started = Date.now();
    socket.write(pipelined(s.sessionId, answers));
    const complete = await until(
      () => (closed ? null : received),
      (found) => found === null || found.length === answers,
      "every answer",
    );
    const took = Date.now() - started;
    expect(closed).toBe(false);
    expect(complete?.map((a) => a.status)).toEqual(Array(answers).fill(200));
    for (const answer of complete ?? []) expect(JSON.parse(answer.body).system).toBe(SYSTEM);
    expect(took).toBeGreaterThan(TIMEOUT_MS);
    expect(s.lines.some((line) => line.includes("answers cut"))).toBe(false);
  }, 60_000);
});
