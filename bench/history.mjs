#!/usr/bin/env node
// `npm run bench:history` (builds first): what a long history costs a run. Server CPU per run
// (from /proc) of runs in a session with 500 prior messages of 2 KB, against runs in fresh
// sessions, each a run with one list_files call against the zero-latency fake upstream, one
// run at a time (a session has one active run). The model requests of a long session carry
// its history (what is sent must be encoded); the rest should not grow with it. The encoding
// allowance is measured on what was actually sent: the fake upstream keeps the bodies of the
// last run's two requests, and this process times JSON.stringify plus UTF-8 of them, for the
// last long run less the last fresh one. With
// BENCH_BASE_ROOT (another built checkout) that checkout's server is measured in alternation.
// Env: BENCH_N (100 runs per measurement), BENCH_ROUNDS (3), BENCH_PRIOR (500 messages),
// BENCH_PRIOR_CHARS (2048). A benchmark, not a test; everything on 127.0.0.1.
import { copyFileSync, mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { cpuMsOf, createHarness, envInt, fmt, machineLine, median, root } from "./harness.mjs";

const N = envInt("BENCH_N", 100);
const ROUNDS = envInt("BENCH_ROUNDS", 3);
const PRIOR = envInt("BENCH_PRIOR", 500);
const PRIOR_CHARS = envInt("BENCH_PRIOR_CHARS", 2048);
const h = createHarness("bench-history");

/** A database with one session holding PRIOR messages in one finished run, made with the server's own store. */
async function seededDatabase(path, workspaces) {
  const { openSqliteStore } = await import(join(root, "dist/src/store/sqlite-store.js"));
  const store = openSqliteStore({ path });
  const at = new Date().toISOString();
  const sessionId = "ses_bench_history";
  await store.sessions.insert({
    id: sessionId,
    owner: null,
    system: null,
    model: null,
    tools: null,
    approval: null,
    workspace: sessionId,
    workspaceShared: false,
    providerProfile: null,
    planning: false,
    metadata: null,
    webhook: null,
    createdAt: at,
  });
  mkdirSync(join(workspaces, sessionId), { recursive: true });
  const runId = "run_bench_history";
  const stats = { modelCalls: 0, toolCalls: 0, turns: 0, inputTokens: 0, outputTokens: 0, durationMs: 0 };
  await store.runs.create(
    {
      id: runId,
      sessionId,
      status: "running",
      stopReason: null,
      stopDetail: null,
      error: null,
      input: "seed",
      maxTurns: 5,
      contextMaxChars: null,
      maxTokens: null,
      maxDurationMs: null,
      maxToolCalls: null,
      loopRepeatLimit: 3,
      planning: false,
      stats,
      createdAt: at,
      finishedAt: null,
      approval: null,
      idempotencyKey: null,
      webhook: null,
    },
    [],
  );
  const text = "y".repeat(PRIOR_CHARS);
  const messages = Array.from({ length: PRIOR }, (_, i) => ({
    id: `msg_seed_${i}`,
    role: i % 2 === 0 ? "user" : "assistant",
    content: text,
    sessionId,
    runId,
    seq: i + 1,
    createdAt: at,
  }));
  for (let i = 0; i < messages.length; i += 100) {
    await store.commitRun(
      runId,
      messages.slice(i, i + 100).map((message) => ({ kind: "message", message })),
      [],
    );
  }
  const end = { stopReason: "complete", stopDetail: null, error: null, stats, finishedAt: at };
  await store.commitRun(runId, [{ kind: "finish", ...end }], []);
  await store.close();
  return sessionId;
}

async function post(url, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** The bodies of the last run's two model requests, as the fake upstream received them. */
async function lastBodies() {
  const res = await fetch(new URL("/bodies", upstream.url));
  const bodies = await res.json();
  if (bodies.length !== 2) throw new Error(`expected the bodies of 2 model requests, got ${bodies.length}`);
  return bodies.map((raw) => JSON.parse(raw));
}

/**
 * CPU ms (this process) to encode `bodies` (the request bodies of one run, as sent) once
 * each: JSON text, then its UTF-8 bytes: what a server must at least do to send them.
 */
function encodingMs(bodies) {
  const encode = () => {
    for (const body of bodies) Buffer.from(JSON.stringify(body), "utf8");
  };
  for (let i = 0; i < 5; i++) encode();
  const reps = 40;
  const start = process.cpuUsage();
  for (let i = 0; i < reps; i++) encode();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000 / reps;
}

/** N runs one after another, each in `sessionOf()`'s session; server CPU ms per run. */
async function measure(server, sessionOf) {
  const before = cpuMsOf(server.child.pid);
  for (let i = 0; i < N; i++) {
    const sessionId = await sessionOf();
    const { run } = await post(`${server.url}/sessions/${sessionId}/runs?wait=true`, { input: "hi" });
    if (run.stopReason !== "complete") throw new Error(`a run did not complete: ${JSON.stringify(run).slice(0, 500)}`);
  }
  return (cpuMsOf(server.child.pid) - before) / N;
}

console.log(
  `bench:history: ${N} runs per measurement, ${ROUNDS} rounds, ${PRIOR} prior messages of ${PRIOR_CHARS} chars`,
);
console.log(`  ${machineLine()}`);
const upstream = await h.startUpstream(join(root, "bench/fake-upstream.mjs"), {
  FAKE_TOOL_NAME: "list_files",
  FAKE_TOOL_ARGS: "{}",
  FAKE_KEEP_BODIES: "2",
});
const subjects = { ours: join(root, "dist/src/server.js") };
if (process.env.BENCH_BASE_ROOT) subjects.base = join(process.env.BENCH_BASE_ROOT, "dist/src/server.js");
const seedDir = join(h.tmp, "seed");
mkdirSync(join(seedDir, "workspaces"), { recursive: true });
const seedDb = join(seedDir, "agent.db");
const longSession = await seededDatabase(seedDb, join(seedDir, "workspaces"));
const results = Object.fromEntries(Object.keys(subjects).map((k) => [k, { long: [], fresh: [], encoding: [] }]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const [name, entry] of Object.entries(subjects)) {
    // Each server over its own copy of the seeded database, so every round starts from PRIOR messages.
    const dir = join(h.tmp, `${name}-${round}`);
    mkdirSync(join(dir, "workspaces", longSession), { recursive: true });
    copyFileSync(seedDb, join(dir, "agent.db"));
    const server = await h.startServer({
      entry,
      label: `${name}-${round}`,
      upstreamUrl: upstream.url,
      cwd: name === "base" ? process.env.BENCH_BASE_ROOT : root,
      env: { DATABASE_PATH: join(dir, "agent.db"), WORKSPACE_ROOT: join(dir, "workspaces"), SHELL_SANDBOX: "off" },
      nodeArgs: (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean),
    });
    // Warm-up, then fresh sessions and the long one, in turn.
    await measure(server, async () => (await post(`${server.url}/sessions`, {})).id);
    const fresh = await measure(server, async () => (await post(`${server.url}/sessions`, {})).id);
    const freshBodies = await lastBodies();
    const long = await measure(server, async () => longSession);
    const longBodies = await lastBodies();
    await h.stop([server.child]);
    // What the longer history adds to encoding what is sent (the fresh run's own encoding is in `fresh`).
    const encoding = encodingMs(longBodies) - encodingMs(freshBodies);
    results[name].fresh.push(fresh);
    results[name].long.push(long);
    results[name].encoding.push(encoding);
    const bytes = longBodies.reduce((sum, b) => sum + Buffer.byteLength(JSON.stringify(b)), 0);
    console.log(
      `  ${name} round ${round}: CPU per run ${fmt(fresh, 2)} ms in a fresh session, ${fmt(long, 2)} ms with ${PRIOR}+ prior messages (${fmt(long / fresh, 2)}x); encoding the last long run's two request bodies (${fmt(bytes / 1e6, 2)} MB) beyond a fresh run's: ${fmt(encoding, 2)} ms`,
    );
  }
}
const line = Object.entries(results)
  .map(([name, r]) => {
    const fresh = median(r.fresh);
    const long = median(r.long);
    const encoding = median(r.encoding);
    const rest = long - fresh - encoding;
    return `${name}: fresh ${fmt(fresh, 2)} ms, long ${fmt(long, 2)} ms (${fmt(long / fresh, 2)}x), encoding ${fmt(encoding, 2)} ms; long - fresh - encoding ${fmt(rest, 2)} ms against fresh ${fmt(fresh, 2)} ms, (long - encoding) / fresh ${fmt((long - encoding) / fresh, 2)}x against 2x`;
  })
  .join("; ");
console.log(
  `bench:history summary: server CPU per run, medians of ${ROUNDS} (load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}): ${line}; aim: long <= 2x fresh + encoding`,
);
h.cleanup();
process.exit(0);
