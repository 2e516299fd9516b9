import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { FD_LIMIT, healthz, healthzWithin, KEY, startLimited } from "../helpers/limited-server.js";
import { openSse, type SseStream } from "../helpers/sse-client.js";

/**
 * Connection exhaustion, as an unauthenticated client would cause it: sockets that are never
 * finished hold the server's file descriptors until /healthz cannot be accepted, and a run in
 * flight cannot open what it needs. The server runs with a lowered descriptor limit (128) so a
 * few hundred sockets prove what thousands do against the default limit. Each test prints its
 * figures.
 */
const KEY_B = "key-b-0123456789abcdef";
const SOCKETS = 200;
const sockets: net.Socket[] = [];
const streams: SseStream[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const stream of streams.splice(0)) stream.close();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Probe {
  socket: net.Socket;
  /** The first bytes the server answered, if any. */
  answer: string;
  closedByServer: boolean;
}

/**
 * Opens a socket that sends `head` and then what `trickle` returns, a piece every 100 ms, for
 * ever; resolves on the first answer, the close, or `holdAfterMs` after connecting (the socket
 * is then held without an answer, and the attack goes on).
 */
function attack(port: number, head: string, trickle?: () => string, holdAfterMs = 20): Promise<Probe> {
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
      setTimeout(() => resolve(probe), holdAfterMs);
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
    const { port } = await startLimited({}, cleanups);
    const probes: Probe[] = [];
    const head =
      "POST /sessions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\n\r\n{";
    // Each is answered (401) and closed: wait for it, however loaded the machine.
    for (let i = 0; i < SOCKETS; i++) probes.push(await attack(port, head, undefined, 5000));
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
    const { port } = await startLimited({ HEADERS_TIMEOUT_MS: "500", REQUEST_TIMEOUT_MS: "1000" }, cleanups);
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
    // The connection cap above the key's (a quarter of the limit both, by default, at this
    // limit): the key's own cap is what stops it here.
    const { port } = await startLimited(
      { AGENT_API_KEYS: `${KEY},${KEY_B}`, OPENAI_BASE_URL: upstream.baseURL, MAX_CONNECTIONS: String(FD_LIMIT / 2) },
      cleanups,
    );
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

  it("a flood of event streams without keys stops at MAX_CONNECTIONS, below the descriptor limit: a run in flight completes, /healthz answers throughout, the rest get 503", async () => {
    const upstream = await startFakeUpstream();
    cleanups.push(() => upstream.close());
    // The run's first model reply streams its text and a tool call, then holds its finish until
    // `release`: the run is in flight, and needs descriptors afterwards (its tool's file, its
    // commits, the upstream request of its next turn).
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const write = { id: "call_w", name: "write_file", arguments: '{"path":"note.txt","content":"kept"}' };
    upstream.enqueue({ text: "writing", toolCalls: [write], gate }, { text: "note.txt written" });
    // No keys (loopback): no per-key cap applies.
    const server = await startLimited({ AGENT_API_KEYS: "", OPENAI_BASE_URL: upstream.baseURL }, cleanups);
    const base = `http://127.0.0.1:${server.port}`;
    const post = async (path: string, body: unknown) =>
      (
        await fetch(`${base}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        })
      ).json();
    const session = await post("/sessions", { approval: { tools: { write_file: "allow" } } });
    const run = await post(`/sessions/${session.id}/runs`, { input: "write the note" });
    const watcher = await openSse(`${base}/runs/${run.id}/events`);
    streams.push(watcher);
    await watcher.waitFor((e) => e.event === "text.delta");
    // The attacker opens event streams of that run until the server turns one away, then ten more.
    const outcomes: string[] = [];
    while (outcomes.length < SOCKETS && (outcomes.at(-1) ?? "held") === "held")
      outcomes.push(await holdStream(server.port, run.id));
    for (let i = 0; i < 10; i++) outcomes.push(await holdStream(server.port, run.id));
    const healthzWhileHeld = await healthz(server.port);
    release();
    const finished = await watcher.waitFor((e) => e.event === "run.finished").catch(() => null);
    for (const socket of sockets.splice(0)) socket.destroy();
    const healthzAfter = await healthzWithin(server.port, 5000);
    const read = async (path: string) => (healthzAfter === 200 ? (await fetch(`${base}${path}`)).json() : null);
    const stored = await read(`/runs/${run.id}`);
    const messages: { role: string; content: string; isError?: boolean }[] =
      (await read(`/sessions/${session.id}/messages`))?.items ?? [];
    const tool = messages.find((m) => m.role === "tool");
    const figures = {
      fdLimit: FD_LIMIT,
      attackerHeld: outcomes.filter((o) => o === "held").length,
      answered503: outcomes.filter((o) => o === "503").length,
      refused: outcomes.filter((o) => o === "refused").length,
      unanswered: outcomes.filter((o) => o === "silent").length,
      overCapLogged: (server.output().match(/connections over the cap/g) ?? []).length,
      healthzWhileHeld,
      watcherSawEnd: finished?.json?.run?.stopReason ?? null,
      run: stored && { status: stored.status, stopReason: stored.stopReason, error: stored.error ?? null },
      tool: tool && { isError: tool.isError, content: tool.content.slice(0, 100) },
      lastMessage: messages.at(-1)?.content ?? null,
      healthzAfter,
    };
    console.log(`exhaustion by streams without keys: ${JSON.stringify(figures)}`);
    expect(figures.attackerHeld).toBeGreaterThan(0);
    // The default cap keeps 112 of the 128 descriptors for the server and 6 for each of its 2
    // runs, which leaves less than a quarter: so a quarter is for connections (the run's watcher
    // and the client's own are under the cap too): without it the attacker held ~91.
    expect(figures.attackerHeld).toBeLessThanOrEqual(FD_LIMIT / 4);
    // Past the cap a client is told why (503 TOO_MANY_CONNECTIONS, the connection closed), and a
    // liveness probe is answered: before, both were reset, and a probe restarted a working server.
    expect(figures.answered503).toBe(11);
    expect(healthzWhileHeld).toBe(200);
    expect(stored).toMatchObject({ status: "finished", stopReason: "complete" });
    expect(tool).toMatchObject({ toolCallId: "call_w", isError: false });
    expect(messages.at(-1)).toMatchObject({ role: "assistant", content: "note.txt written" });
    expect(healthzAfter).toBe(200);
    expect(figures.overCapLogged).toBeGreaterThan(0);
  });
});

/**
 * Opens an event stream of `runId` on a raw socket: "held" once the server answers it, "503"
 * when it answers 503 instead, "refused" when it closes the socket unanswered, "silent" when
 * it says nothing for 2 s.
 */
function holdStream(port: number, runId: string): Promise<"held" | "503" | "refused" | "silent"> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    sockets.push(socket);
    socket.on("error", () => {});
    socket.once("data", (d) => resolve(String(d).startsWith("HTTP/1.1 503") ? "503" : "held"));
    socket.once("close", () => resolve("refused"));
    socket.once("connect", () =>
      socket.write(`GET /runs/${runId}/events HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\n\r\n`),
    );
    setTimeout(() => resolve("silent"), 2000).unref();
  });
}
