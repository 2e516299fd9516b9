#!/usr/bin/env node
// `npm run bench:fanout` (builds first): one run streamed to W watchers (BENCH_WATCHERS,
// "1000,5000"), BENCH_REPS (3) times each, medians. Per repetition: a session and a run whose
// text answer the fake upstream holds (FAKE_HOLD_TEXT) until W watchers are connected to
// GET /runs/{id}/events (raw sockets, at most 256 connecting at once); then the upstream
// streams BENCH_TOKENS (200) stamped tokens at one per BENCH_TOKEN_MS (20) and every watcher
// reads to the run's end. Figures: connect time (all W connected; per-watcher p99), token
// latency p50/p99 over every watcher's tokens (upstream send -> watcher receive), server CPU
// while streaming (/proc) per token delivered to a watcher and per write (the client counts
// the chunks of each chunked body: one a server write), RSS per connected watcher, this
// client's own CPU. A benchmark, not a test: figures and a last summary line (ours / base /
// floor). Everything on 127.0.0.1. BENCH_BASE_ROOT (another built checkout) measures its
// server too, as "base", in alternation with ours. The floor (bench/fanout-floor-server.mjs,
// a fixture) writes the same SSE bytes of each token to every watcher's socket and does
// nothing else, measured in the same rotation. BENCH_SERVER_NODE_ARGS: extra node flags for
// our server and base (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", then
// `node bench/cpuprofile-top.mjs /tmp/prof/*.cpuprofile`); BENCH_FLOOR_NODE_ARGS the same for the floor.
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { cpuMsOf, createHarness, envInt, fmt, machineLine, machineLoad, median, root } from "./harness.mjs";
import { percentile, stampLatencies, wallMs } from "./token-stamps.mjs";

const WS = (process.env.BENCH_WATCHERS ?? "1000,5000").split(",").map(Number);
const REPS = envInt("BENCH_REPS", 3);
const TOKENS = envInt("BENCH_TOKENS", 200);
const TOKEN_MS = envInt("BENCH_TOKEN_MS", 20);
const CONNECTING = 256;
const CHUNK_LINE = /\r\n[0-9a-f]+\r\n/g;

const h = createHarness("bench-fanout");
console.log(`bench:fanout: one run streaming ${TOKENS} tokens at one per ${TOKEN_MS} ms to W watchers`);
console.log(`  ${machineLine()}`);
const upstream = await h
  .startStreamingUpstream({ tokens: TOKENS, intervalMs: TOKEN_MS, hold: true })
  .catch((err) => h.fail(err.message));
const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
const servers = await h.startOurs({ upstreamUrl: upstream.url, nodeArgs }).catch((err) => h.fail(err.message));
// The floor: the same SSE bytes of each token written to W sockets, nothing else (a fixture).
servers.floor = await h
  .startServer({
    entry: join(root, "bench/fanout-floor-server.mjs"),
    label: "floor",
    upstreamUrl: upstream.url,
    nodeArgs: (process.env.BENCH_FLOOR_NODE_ARGS ?? "").split(/\s+/).filter(Boolean),
  })
  .catch((err) => h.fail(err.message));
const SUBJECTS = Object.keys(servers);
const upstreamOrigin = new URL(upstream.url);
console.log(
  `  upstream pid ${upstream.child.pid}, ${Object.entries(servers)
    .map(([name, s]) => `${name} pid ${s.child.pid}`)
    .join(", ")}${servers.base ? ` (base: ${process.env.BENCH_BASE_ROOT}, measured in alternation with ours)` : ""}`,
);

/** One JSON request; resolves with { status, body }. */
function call(base, method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        headers: data ? { "content-type": "application/json" } : {},
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (part) => (text += part));
        res.on("end", () => resolve({ status: res.statusCode, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

const rssKb = (pid) => {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+)/m);
  return m ? Number(m[1]) : Number.NaN;
};

/**
 * A watcher on a raw socket: `connected` resolves at its first bytes (the status line must
 * be 200); `done` resolves when the server closes the stream. Token latencies go to `into`.
 */
function watch(origin, runId, into) {
  const started = performance.now();
  const socket = connect({ host: origin.hostname, port: Number(origin.port) });
  socket.setEncoding("latin1");
  let carry = "";
  let first = true;
  let finished = false;
  let tokens = 0;
  let writes = 0;
  let resolveConnected;
  let rejectConnected;
  const connected = new Promise((resolve, reject) => {
    resolveConnected = resolve;
    rejectConnected = reject;
  });
  const done = new Promise((resolve) => {
    socket.on("data", (text) => {
      const now = wallMs();
      if (first) {
        first = false;
        if (!text.startsWith("HTTP/1.1 200")) rejectConnected(new Error(`watcher answered ${text.slice(0, 40)}`));
        else resolveConnected(performance.now() - started);
      }
      const all = carry + text;
      const end = all.lastIndexOf("\n\n");
      if (end < 0) {
        carry = all;
        return;
      }
      const complete = all.slice(0, end);
      carry = all.slice(end + 2);
      // Each server write is one chunk of the chunked body: count their size lines (SSE data has no CR).
      writes += complete.match(CHUNK_LINE)?.length ?? 0;
      // Only text.delta frames: the final `message` event repeats the whole text.
      for (const frame of complete.split("\n\n")) {
        if (frame.includes("event: text.delta")) tokens += stampLatencies(frame, now, into);
        else if (frame.includes("event: run.finished")) finished = true;
      }
    });
    socket.on("error", (err) => rejectConnected(err));
    socket.on("close", () => resolve({ finished, tokens, writes }));
  });
  socket.write(
    `GET /runs/${runId}/events HTTP/1.1\r\nHost: ${origin.host}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n`,
  );
  return { connected, done };
}

async function once(w, server) {
  const origin = new URL(server.url);
  const session = await call(origin, "POST", "/sessions", {});
  const run = await call(origin, "POST", `/sessions/${session.body.id}/runs`, { input: "hi" });
  if (run.status !== 201) throw new Error(`POST /runs answered ${run.status}`);
  // Wait until the run's text request is held upstream.
  for (let i = 0; ; i++) {
    const stats = await call(upstreamOrigin, "GET", "/stats");
    if (stats.body.texts >= textsSoFar + 1) break;
    if (i > 500) throw new Error("the run's text request never reached the upstream");
    await new Promise((r) => setTimeout(r, 10));
  }
  textsSoFar++;
  const rss0 = rssKb(server.child.pid);
  const latencies = [];
  const watchers = [];
  const connectMs = [];
  const t0 = performance.now();
  let next = 0;
  const connector = async () => {
    while (next < w) {
      next++;
      const watcher = watch(origin, run.body.id, latencies);
      watchers.push(watcher);
      connectMs.push(await watcher.connected);
    }
  };
  await Promise.all(Array.from({ length: CONNECTING }, connector));
  const allConnectedMs = performance.now() - t0;
  const rssPerWatcherKb = (rssKb(server.child.pid) - rss0) / w;
  const cpu0 = cpuMsOf(server.child.pid);
  const client0 = process.cpuUsage();
  await call(upstreamOrigin, "POST", "/release");
  const ends = await Promise.all(watchers.map((x) => x.done));
  const client = process.cpuUsage(client0);
  const serverCpuMs = cpuMsOf(server.child.pid) - cpu0;
  await call(upstreamOrigin, "POST", "/hold");
  const incomplete = ends.filter((e) => !e.finished || e.tokens !== TOKENS).length;
  const writes = ends.reduce((a, e) => a + e.writes, 0);
  latencies.sort((a, b) => a - b);
  return {
    w,
    allConnectedMs,
    connectP99: percentile(connectMs, 99),
    p50: percentile(latencies, 50, true),
    p99: percentile(latencies, 99, true),
    max: latencies.at(-1),
    tokens: latencies.length,
    incomplete,
    serverCpuMs,
    // Server CPU per token delivered to a watcher, and per write (the per-watcher cost whatever the tokens merged).
    cpuUsPerDelivery: (serverCpuMs * 1000) / latencies.length,
    cpuUsPerWrite: (serverCpuMs * 1000) / writes,
    tokensPerWrite: latencies.length / writes,
    clientCpuMs: (client.user + client.system) / 1000,
    rssPerWatcherKb,
  };
}

let textsSoFar = 0;
const rows = [];
for (const w of WS) {
  const results = Object.fromEntries(SUBJECTS.map((name) => [name, []]));
  for (let rep = 0; rep < REPS; rep++) {
    for (let k = 0; k < SUBJECTS.length; k++) {
      const name = SUBJECTS[(k + rep) % SUBJECTS.length];
      const r = await once(w, servers[name]).catch((err) => h.fail(err.message));
      results[name].push(r);
      console.log(
        `  ${name} W=${w} #${rep + 1}: connect all ${fmt(r.allConnectedMs, 0)} ms (p99 ${fmt(r.connectP99)}), token p50 ${fmt(r.p50)} ` +
          `p99 ${fmt(r.p99)} max ${fmt(r.max)} ms over ${r.tokens} tokens, ${r.incomplete} watchers incomplete; server CPU ` +
          `${fmt(r.serverCpuMs, 0)} ms (${fmt(r.cpuUsPerDelivery, 2)} us a token a watcher, ${fmt(r.cpuUsPerWrite, 2)} us a write, ` +
          `${fmt(r.tokensPerWrite, 2)} tokens a write), client CPU ${fmt(r.clientCpuMs, 0)} ms, RSS ${fmt(r.rssPerWatcherKb)} KB/watcher`,
      );
    }
  }
  for (const name of SUBJECTS) {
    const m = (key) => median(results[name].map((r) => r[key]));
    rows.push({
      name,
      w,
      connect: m("allConnectedMs"),
      p50: m("p50"),
      p99: m("p99"),
      cpu: m("serverCpuMs"),
      perDelivery: m("cpuUsPerDelivery"),
      perWrite: m("cpuUsPerWrite"),
      incomplete: results[name].reduce((a, r) => a + r.incomplete, 0),
      rss: m("rssPerWatcherKb"),
    });
  }
}
await h.stop();
console.log(`summary (medians of ${REPS}; server CPU from the release of the tokens to the last watcher's end):`);
for (const r of rows) {
  console.log(
    `  ${r.name.padEnd(5)} W=${String(r.w).padEnd(6)} connect ${fmt(r.connect, 0).padStart(6)} ms  token p50 ${fmt(r.p50).padStart(6)}  ` +
      `p99 ${fmt(r.p99).padStart(6)} ms  server CPU ${fmt(r.cpu, 0).padStart(6)} ms/run ` +
      `(${fmt(r.perDelivery, 2)} us a token a watcher, ${fmt(r.perWrite, 2)} us a write)  RSS ${fmt(r.rss)} KB/watcher  incomplete ${r.incomplete}`,
  );
}
// The last line: per W, ours / base / floor side by side.
const names = SUBJECTS.join(" / ");
const per = (w, key, digits) =>
  SUBJECTS.map((name) => fmt(rows.find((r) => r.w === w && r.name === name)?.[key], digits)).join(" / ");
console.log(
  `bench:fanout (${names}): ${WS.map(
    (w) =>
      `W=${w} server CPU ${per(w, "perDelivery", 2)} us a token a watcher (${per(w, "perWrite", 2)} us a write), ` +
      `token p99 ${per(w, "p99", 1)} ms (p50 ${per(w, "p50", 1)}), connect ${per(w, "connect", 0)} ms`,
  ).join("; ")}; load average ${machineLoad()}`,
);
h.cleanup();
