#!/usr/bin/env node
// `npm run bench:soak` (builds first): a bounded soak on loopback, not a test. For
// SOAK_SECONDS (60) it keeps SOAK_RUNS (200) runs in flight, each a session and a run
// whose tool call (`write_file`) asks for approval, answered by a second client; and
// SOAK_WATCHERS (1000) SSE watchers that connect to random runs at random resume points
// and disconnect at random. It checks every stream for gaps and duplicates, that every
// run ends `complete`, that no run is left unfinished, and samples the server's RSS.
// SOAK_MODEL_LATENCY_MS delays each model reply (0: as fast as possible, which saturates
// the server; then Node accepts one new connection per event-loop turn and new watchers queue).
// The watchers are a closed loop: each reconnects as soon as its stream ends, and a stream
// of a finished run ends right after its replay, so they queue at accept() whenever the
// server is busy; "connecting" in the progress lines counts watchers waiting for a response.
// SOAK_WARMUP_SECONDS (a third of the soak, at most 20 s): the RSS samples before it are not judged. The
// first seconds are a ramp (1,000 watchers connecting at once, 200 runs starting, the V8
// heap and SQLite's page cache growing to their working size).
// Prints its figures; exits 1 when a check failed.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import { createServer } from "node:net";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const RUNS = Number(process.env.SOAK_RUNS ?? 200);
const WATCHERS = Number(process.env.SOAK_WATCHERS ?? 1000);
const WARMUP_SECONDS = Number(process.env.SOAK_WARMUP_SECONDS ?? Math.min(20, Math.max(1, Math.round(SECONDS / 3))));
/** Delay before each model reply's first chunk; 0 (as fast as possible) saturates the server. */
const MODEL_LATENCY_MS = Number(process.env.SOAK_MODEL_LATENCY_MS ?? 0);

const children = [];
const stopChildren = () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
};
process.on("exit", stopChildren);
process.on("SIGINT", () => process.exit(130));
process.on("SIGTERM", () => process.exit(143));

function startChild(args, env) {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return child;
}

async function freePort() {
  const server = createServer().listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

const firstLine = (child) =>
  new Promise((resolve, reject) => {
    let text = "";
    child.stdout.on("data", (d) => {
      text += d;
      const at = text.indexOf("\n");
      if (at >= 0) resolve(text.slice(0, at).trim());
    });
    child.once("exit", () => reject(new Error("child exited before printing its port")));
  });

function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

// ---------- HTTP ----------
const runner = new http.Agent({ keepAlive: true, maxSockets: RUNS * 2 });
const approver = new http.Agent({ keepAlive: true, maxSockets: 64 });
const watcherAgent = new http.Agent({ keepAlive: false });
let base = "";

function request(method, path, { body, agent = runner, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(`${base}${path}`, {
      method,
      agent,
      headers: { ...(data ? { "content-type": "application/json", "content-length": data.length } : {}), ...headers },
    });
    req.on("error", reject);
    req.on("response", resolve);
    req.end(data);
  });
}

async function json(method, path, options) {
  const res = await request(method, path, options);
  let text = "";
  for await (const chunk of res) text += chunk;
  if (res.statusCode >= 300) throw new Error(`${method} ${path} -> ${res.statusCode} ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : null;
}

/** Reads an SSE response, calling onEvent({id, event, data}); resolves at its end. */
async function readEvents(res, onEvent) {
  let buffer = "";
  for await (const chunk of res) {
    buffer += chunk;
    let at = buffer.indexOf("\n\n");
    while (at >= 0) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      at = buffer.indexOf("\n\n");
      const frame = {};
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        frame[line.slice(0, colon)] = line.slice(colon + 2);
      }
      if (frame.data !== undefined) onEvent(frame);
    }
  }
}

// ---------- the load ----------
const stats = {
  runsStarted: 0,
  runsComplete: 0,
  runErrors: 0,
  approvals: 0,
  watcherConnections: 0,
  watchersConnecting: 0,
  watchersReading: 0,
  watcherEvents: 0,
  watcherFinished: 0,
  gaps: 0,
  failures: [],
};
const fail = (what) => {
  if (stats.failures.length < 10) stats.failures.push(what);
};
const recentRuns = [];
let stopping = false;

async function oneRun() {
  const session = await json("POST", "/sessions", { body: {} });
  const run = await json("POST", `/sessions/${session.id}/runs`, { body: { input: "write it" } });
  stats.runsStarted++;
  recentRuns.push(run.id);
  if (recentRuns.length > 500) recentRuns.shift();
  const res = await request("GET", `/runs/${run.id}/events`, { headers: { accept: "text/event-stream" } });
  let last = 0;
  let finished = null;
  await readEvents(res, (frame) => {
    const seq = Number(frame.id);
    if (seq !== last + 1) {
      stats.gaps++;
      fail(`run ${run.id}: seq ${last} -> ${seq}`);
    }
    last = seq;
    if (frame.event === "approval.requested") {
      const { toolCallId } = JSON.parse(frame.data);
      json("POST", `/runs/${run.id}/approvals/${toolCallId}`, { body: { decision: "approve" }, agent: approver })
        .then(() => stats.approvals++)
        .catch((err) => fail(`approve ${run.id}: ${err.message}`));
    }
    if (frame.event === "run.finished") finished = JSON.parse(frame.data).run;
  });
  if (finished?.stopReason === "complete") stats.runsComplete++;
  else {
    stats.runErrors++;
    fail(
      `run ${run.id} ended ${finished ? `${finished.stopReason} ${JSON.stringify(finished.error)}` : "without run.finished"}`,
    );
  }
  return run.id;
}

async function runWorker(started) {
  while (!stopping) {
    try {
      started.push(await oneRun());
    } catch (err) {
      stats.runErrors++;
      fail(err.message);
    }
  }
}

async function watcher() {
  while (!stopping) {
    const runId = recentRuns[Math.floor(Math.random() * recentRuns.length)];
    if (!runId) {
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    const after = Math.floor(Math.random() * 4);
    const stayMs = 50 + Math.random() * 1500;
    stats.watcherConnections++;
    try {
      stats.watchersConnecting++;
      const res = await request("GET", `/runs/${runId}/events`, {
        agent: watcherAgent,
        headers: { accept: "text/event-stream", "last-event-id": String(after) },
      }).finally(() => stats.watchersConnecting--);
      stats.watchersReading++;
      const timer = setTimeout(() => res.destroy(), stayMs);
      let last = after;
      await readEvents(res, (frame) => {
        const seq = Number(frame.id);
        stats.watcherEvents++;
        if (seq !== last + 1) {
          stats.gaps++;
          fail(`watcher of ${runId} after ${after}: seq ${last} -> ${seq}`);
        }
        last = seq;
        if (frame.event === "run.finished") stats.watcherFinished++;
      }).catch(() => {});
      stats.watchersReading--;
      clearTimeout(timer);
    } catch (err) {
      if (!stopping) fail(`watcher: ${err.message}`);
    }
  }
}

// ---------- main ----------
const tmp = mkdtempSync(join(os.tmpdir(), "agent-soak-"));
try {
  const upstream = startChild([join(root, "bench/fake-upstream.mjs")], {
    PORT: "0",
    FAKE_LATENCY_MS: String(MODEL_LATENCY_MS),
    FAKE_TOOL_NAME: "write_file",
    FAKE_TOOL_ARGS: '{"path":"out.txt","content":"soak"}',
  });
  const upstreamPort = await firstLine(upstream);
  const port = await freePort();
  const server = startChild([join(root, "dist/src/server.js")], {
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_PATH: join(tmp, "agent.db"),
    WORKSPACE_ROOT: join(tmp, "workspaces"),
    OPENAI_BASE_URL: `http://127.0.0.1:${upstreamPort}/v1`,
    OPENAI_MODEL: "fake-model",
    OPENAI_API_KEY: "sk-soak",
    MAX_CONCURRENT_RUNS: String(RUNS * 2),
    LOG_LEVEL: "warn",
  });
  base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await json("GET", "/healthz")).status === "ok") break;
    } catch {
      if (i > 200) throw new Error("server did not start");
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  console.log(
    `soak: ${RUNS} concurrent runs with approvals, ${WATCHERS} reconnecting watchers, ${SECONDS} s, model latency ${MODEL_LATENCY_MS} ms`,
  );
  console.log(`machine: ${os.cpus()[0]?.model} x${os.cpus().length}, node ${process.version}`);
  const rss = [];
  const sampler = setInterval(() => rss.push({ t: (Date.now() - t0) / 1000, mb: rssMb(server.pid) }), 1000);
  const t0 = Date.now();
  const started = [];
  const workers = [
    ...Array.from({ length: RUNS }, () => runWorker(started)),
    ...Array.from({ length: WATCHERS }, () => watcher()),
  ];
  const progress = setInterval(
    () => {
      const t = Math.round((Date.now() - t0) / 1000);
      console.log(
        `  t=${t}s runs ${stats.runsComplete} complete, ${stats.runErrors} errors; approvals ${stats.approvals}; watcher connections ${stats.watcherConnections} (${stats.watchersConnecting} connecting, ${stats.watchersReading} reading); gaps ${stats.gaps}; rss ${rssMb(server.pid).toFixed(1)} MB`,
      );
    },
    Number(process.env.SOAK_PROGRESS_MS ?? 10_000),
  );
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  stopping = true;
  const drainStart = Date.now();
  await Promise.race([Promise.all(workers), new Promise((r) => setTimeout(r, 30_000))]);
  clearInterval(sampler);
  clearInterval(progress);
  const elapsed = (Date.now() - t0) / 1000;

  // No stuck run: every run that was started has finished.
  let unfinished = 0;
  for (const id of started) {
    const run = await json("GET", `/runs/${id}`);
    if (run.status !== "finished") unfinished++;
  }
  const live = await json("GET", "/readyz").catch((e) => ({ error: e.message }));

  const warm = rss.filter((s) => s.t >= WARMUP_SECONDS);
  const first = warm[0]?.mb ?? 0;
  const lastRss = warm.at(-1)?.mb ?? 0;
  const peak = Math.max(...warm.map((s) => s.mb));
  // Least-squares slope of RSS over time after the warm-up, MB per minute.
  const n = warm.length;
  const mt = warm.reduce((a, s) => a + s.t, 0) / n;
  const mm = warm.reduce((a, s) => a + s.mb, 0) / n;
  const slope =
    (warm.reduce((a, s) => a + (s.t - mt) * (s.mb - mm), 0) / warm.reduce((a, s) => a + (s.t - mt) ** 2, 0)) * 60;

  console.log("results:");
  console.log(
    `  runs: ${stats.runsStarted} started, ${stats.runsComplete} complete, ${stats.runErrors} errors, ${unfinished} left unfinished`,
  );
  console.log(
    `  throughput: ${(stats.runsComplete / SECONDS).toFixed(1)} runs/s with approvals; drain ${Date.now() - drainStart} ms`,
  );
  console.log(`  approvals answered by the second client: ${stats.approvals}`);
  console.log(
    `  watchers: ${stats.watcherConnections} connections, ${stats.watcherEvents} events checked, ${stats.watcherFinished} reached run.finished`,
  );
  console.log(`  gaps or duplicates: ${stats.gaps}`);
  console.log(
    `  server RSS after ${WARMUP_SECONDS} s warm-up: first ${first.toFixed(1)} MB, last ${lastRss.toFixed(1)} MB, peak ${peak.toFixed(1)} MB, slope ${slope.toFixed(2)} MB/min`,
  );
  const windows = [];
  for (let from = WARMUP_SECONDS; from < SECONDS; from += 10) {
    const inWindow = warm.filter((s) => s.t >= from && s.t < from + 10).map((s) => s.mb);
    if (inWindow.length)
      windows.push(`${from}-${from + 10}s ${Math.min(...inWindow).toFixed(0)}-${Math.max(...inWindow).toFixed(0)}`);
  }
  console.log(`  server RSS per 10 s window after the warm-up (min-max MB): ${windows.join(", ")}`);
  console.log(`  readyz at the end: ${JSON.stringify(live)}`);
  console.log(`  elapsed ${elapsed.toFixed(1)} s`);
  if (stats.failures.length) console.log(`  first failures:\n    ${stats.failures.join("\n    ")}`);
  const ok = stats.runErrors === 0 && stats.gaps === 0 && unfinished === 0 && stats.failures.length === 0;
  console.log(ok ? "soak: OK" : "soak: FAILED");
  process.exitCode = ok ? 0 : 1;
} finally {
  runner.destroy();
  approver.destroy();
  stopChildren();
  rmSync(tmp, { recursive: true, force: true });
}
