import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { freePort } from "../helpers/child-server.js";
import { openSse, type SseStream } from "../helpers/sse-client.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * Connection exhaustion, as an unauthenticated client would cause it: sockets that are never
 * finished hold the server's file descriptors until /healthz cannot be accepted. The server
 * runs with a lowered descriptor limit (128) so a few hundred sockets prove what thousands do
 * against the default limit. Each test prints its figures.
 */
const root = fileURLToPath(new URL("../..", import.meta.url));
const KEY = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
const FD_LIMIT = 128;
const SOCKETS = 200;
const children: ChildProcess[] = [];
const sockets: net.Socket[] = [];
const streams: SseStream[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const stream of streams.splice(0)) stream.close();
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  }
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** The built server under `ulimit -n FD_LIMIT`, with keys; resolves with its port once it answers. */
async function startLimited(env: Record<string, string> = {}): Promise<number> {
  const temp = tempDir("exhaustion-");
  cleanups.push(temp.cleanup);
  const port = await freePort();
  const child = spawn(
    "/bin/sh",
    ["-c", `ulimit -n ${FD_LIMIT} && exec "$0" "$@"`, process.execPath, join(root, "dist/src/server.js")],
    {
      cwd: temp.path,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        PORT: String(port),
        HOST: "127.0.0.1",
        DATABASE_PATH: join(temp.path, "agent.db"),
        WORKSPACE_ROOT: join(temp.path, "ws"),
        AGENT_API_KEYS: KEY,
        OPENAI_MODEL: "m",
        OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
        LOG_LEVEL: "warn",
        ...env,
      },
      stdio: "ignore",
    },
  );
  children.push(child);
  const deadline = Date.now() + 15_000;
  while ((await healthz(port)) !== 200) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("the server did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
  return port;
}

/** GET /healthz on a new connection (a pooled one would not need a free descriptor): its status, or the error. */
function healthz(port: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/healthz", agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (err) => resolve((err as NodeJS.ErrnoException).code ?? err.message));
  });
}

interface Probe {
  socket: net.Socket;
  /** The first bytes the server answered, if any. */
  answer: string;
  closedByServer: boolean;
}

/** Opens a socket that sends `head` and then what `trickle` returns, a piece every 100 ms, for ever. */
function attack(port: number, head: string, trickle?: () => string): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    sockets.push(socket);
    const probe: Probe = { socket, answer: "", closedByServer: false };
    let timer: NodeJS.Timeout | undefined;
    socket.on("error", () => {});
    socket.on("data", (d) => {
      probe.answer += d;
      resolve(probe);
    });
    socket.on("close", () => {
      probe.closedByServer = true;
      clearInterval(timer);
      resolve(probe);
    });
    socket.on("connect", () => {
      socket.write(head);
      if (trickle) timer = setInterval(() => socket.writable && socket.write(trickle()), 100);
      // Without an answer the socket is held: the attack goes on with the next one.
      setTimeout(() => resolve(probe), 20);
    });
  });
}

const until = async (done: () => boolean, ms: number) => {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  return done();
};

describe("connection exhaustion", () => {
  it("sockets that declared a 1 MB body and got their 401 are closed: /healthz still answers", async () => {
    const port = await startLimited();
    const probes: Probe[] = [];
    const head =
      "POST /sessions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\n\r\n{";
    for (let i = 0; i < SOCKETS; i++) probes.push(await attack(port, head));
    const answered = probes.filter((p) => p.answer.startsWith("HTTP/1.1 401"));
    await until(() => answered.every((p) => p.closedByServer), 2000);
    const health = await healthz(port);
    const figures = {
      sockets: SOCKETS,
      fdLimit: FD_LIMIT,
      answered401: answered.length,
      closedAfter401: answered.filter((p) => p.closedByServer).length,
      healthz: health,
    };
    console.log(`exhaustion after 401: ${JSON.stringify(figures)}`);
    expect(answered.length).toBe(SOCKETS);
    expect(answered.every((p) => /\r\nconnection: close\r\n/i.test(p.answer))).toBe(true);
    expect(figures.closedAfter401).toBe(SOCKETS);
    expect(health).toBe(200);
  });

  it("slow clients (silent, headers or an authorized body a byte at a time) are cut after the timeouts: /healthz answers again", async () => {
    const port = await startLimited({ HEADERS_TIMEOUT_MS: "500", REQUEST_TIMEOUT_MS: "1000" });
    const started = Date.now();
    const probes = await Promise.all(
      Array.from({ length: SOCKETS }, (_, i) =>
        i % 3 === 0
          ? attack(port, "") // connects and says nothing
          : i % 3 === 1
            ? attack(port, "GET /sessions HTTP/1.1\r\nhost: x\r\n", () => "x")
            : attack(
                port,
                `POST /sessions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\n\r\n{`,
                () => " ",
              ),
      ),
    );
    const duringHold = await healthz(port);
    const cut = await until(() => probes.every((p) => p.closedByServer), 5000);
    const allCutMs = Date.now() - started;
    const after = await healthz(port);
    const figures = {
      sockets: SOCKETS,
      fdLimit: FD_LIMIT,
      healthzWhileHeld: duringHold,
      cutByServer: probes.filter((p) => p.closedByServer).length,
      answered408: probes.filter((p) => p.answer.startsWith("HTTP/1.1 408")).length,
      allCutMs: cut ? allCutMs : null,
      healthzAfter: after,
    };
    console.log(`exhaustion by slow clients: ${JSON.stringify(figures)}`);
    expect(cut).toBe(true);
    expect(after).toBe(200);
  });

  it("one key's event streams of its own run awaiting approval stop at the default cap (a quarter of the limit): /healthz and another key are served", async () => {
    const upstream = await startFakeUpstream();
    cleanups.push(() => void upstream.close());
    upstream.enqueue({ toolCalls: [{ id: "call_sh", name: "shell", arguments: '{"command":"echo hi"}' }] });
    const port = await startLimited({ AGENT_API_KEYS: `${KEY},${KEY_B}`, OPENAI_BASE_URL: upstream.baseURL });
    const base = `http://127.0.0.1:${port}`;
    const as = (key: string) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });
    const post = async (path: string, key: string, body: unknown = {}) =>
      (await fetch(`${base}${path}`, { method: "POST", headers: as(key), body: JSON.stringify(body) })).json();
    const session = await post("/sessions", KEY);
    const run = await post(`/sessions/${session.id}/runs`, KEY, { input: "go" });
    let status = "";
    const poll = async () => {
      status = (await (await fetch(`${base}/runs/${run.id}`, { headers: as(KEY) })).json()).status;
    };
    for (const deadline = Date.now() + 5000; status !== "awaiting_approval" && Date.now() < deadline; ) await poll();
    expect(status).toBe("awaiting_approval");
    // The attacker opens streams until refused (before the cap, the descriptors ran out first).
    let refused: SseStream | undefined;
    while (streams.length < SOCKETS && !refused) {
      const stream = await openSse(`${base}/runs/${run.id}/events`, { headers: as(KEY) });
      streams.push(stream);
      if (stream.status !== 200) refused = stream;
    }
    const held = streams.length - 1;
    const health = await healthz(port);
    const other = await post("/sessions", KEY_B);
    upstream.enqueue({ toolCalls: [{ id: "call_b", name: "shell", arguments: '{"command":"echo b"}' }] });
    const otherRun = await post(`/sessions/${other.id}/runs`, KEY_B, { input: "go" });
    const otherStream = await openSse(`${base}/runs/${otherRun.id}/events`, { headers: as(KEY_B) });
    streams.push(otherStream);
    const figures = {
      fdLimit: FD_LIMIT,
      held,
      refusal: refused?.status,
      healthz: health,
      otherKey: otherStream.status,
    };
    console.log(`exhaustion by one key's streams: ${JSON.stringify(figures)}`);
    expect(held).toBe(FD_LIMIT / 4);
    expect(refused?.status).toBe(429);
    expect(JSON.parse((await refused?.body) ?? "{}").error.code).toBe("TOO_MANY_STREAMS");
    expect(health).toBe(200);
    expect(other.id).toMatch(/^ses_/);
    expect(otherStream.status).toBe(200);
    await otherStream.waitFor((e) => e.event === "run.started");
  });
});
