#!/usr/bin/env node
// `npm run bench:http` (builds first): the whole server over HTTP/SSE against a fake
// model upstream, side by side with the floor (the same two model requests made
// directly). A benchmark, not a test: it prints figures and a comparison with the
// targets, and fails only when the benchmark itself could not run.
//
// Children: the fake upstream (../shared/bench/fake-upstream.mjs when the shared kit is
// checked out next to this repo, else bench/fake-upstream.mjs), the built server
// (node dist/src/server.js, temp database and workspaces), and the load driver per
// measurement (../shared/bench/load.mjs, the agreed measuring tool; when missing,
// bench/mini-load.mjs). All on 127.0.0.1.
//
// Env: BENCH_N1 (200 runs at C=1), BENCH_N25 (500 runs at C=25), BENCH_C (25),
//   BENCH_WARMUP (50 runs before each measurement), BENCH_SHARED_DIR (the kit, default ../shared/bench),
//   BENCH_OWN_UPSTREAM=1 / BENCH_OWN_LOAD=1 (use our fallbacks even when the kit is there),
//   BENCH_SERVER_NODE_ARGS (extra node flags for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"),
//   BENCH_KEEP_TMP=1 (keep the temp dir: database and the drivers' JSON results),
//   DATABASE_URL (postgres://...: the server over that PostgreSQL database instead of a temp SQLite file),
//   BENCH_SERVER_ENTRY (the server script, relative to the repo root; default dist/src/server.js;
//   bench/stack-floor-server.mjs measures the stack floor: the same libraries, no product logic).
// Profiling the server under this load:
//   BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node bench/http.mjs
//   node bench/cpuprofile-top.mjs /tmp/prof/*.cpuprofile
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const envInt = (name, fallback) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`${name} must be a non-negative integer`);
    process.exit(2);
  }
  return value;
};
const N1 = envInt("BENCH_N1", 200);
const N25 = envInt("BENCH_N25", 500);
const C = envInt("BENCH_C", 25);
const WARMUP = envInt("BENCH_WARMUP", 50);

// Targets (from the issue): >= 10x the peer's throughput at C=25 (the peer did 30-37 runs/s),
// <= 2.5 ms server CPU per run, p50 within 3 ms of the floor at C=1.
const PEER_RUNS_PER_S = [30, 37];
const TARGET_CPU_MS_PER_RUN = 2.5;
const TARGET_P50_OVER_FLOOR_MS = 3;

const sharedDir = resolve(root, process.env.BENCH_SHARED_DIR || "../shared/bench");
const sharedUpstream = join(sharedDir, "fake-upstream.mjs");
const sharedLoad = join(sharedDir, "load.mjs");
const useSharedUpstream = existsSync(sharedUpstream) && process.env.BENCH_OWN_UPSTREAM !== "1";
const useSharedLoad = existsSync(sharedLoad) && process.env.BENCH_OWN_LOAD !== "1";
const upstreamScript = useSharedUpstream ? sharedUpstream : join(root, "bench/fake-upstream.mjs");
const loadScript = useSharedLoad ? sharedLoad : join(root, "bench/mini-load.mjs");
const serverEntry = resolve(root, process.env.BENCH_SERVER_ENTRY || "dist/src/server.js");
/** How the measured server is labelled: "ours", or "stack" for the stack-floor fixture (any other entry). */
const subject = process.env.BENCH_SERVER_ENTRY ? "stack" : "ours";

const tmp = mkdtempSync(join(os.tmpdir(), "bench-http-"));
const children = new Set();
let cleaned = false;

function cleanup() {
  if (cleaned) return;
  cleaned = true;
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  }
  if (process.env.BENCH_KEEP_TMP !== "1") rmSync(tmp, { recursive: true, force: true });
}
/** Waits for every child to exit, killing whatever is still alive after `ms`. */
async function stopChildren(ms = 5000) {
  const alive = [...children].filter((c) => c.exitCode === null && c.signalCode === null);
  for (const child of alive) child.kill("SIGTERM");
  const timer = setTimeout(() => {
    for (const child of alive) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }, ms);
  await Promise.all(alive.map((child) => new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)))));
  clearTimeout(timer);
}
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping the children`);
    cleanup();
    process.exit(130);
  });
}
process.on("exit", cleanup);

function fail(message) {
  console.error(`bench:http: ${message}`);
  cleanup();
  process.exit(1);
}

function track(child, name) {
  children.add(child);
  child.once("exit", (code, signal) => {
    children.delete(child);
    if (!cleaned && !child.expectedExit) console.error(`${name} exited (code ${code}, signal ${signal})`);
  });
  return child;
}

/** Starts the fake upstream and resolves with its port (its first stdout line). */
function startUpstream() {
  const child = track(
    spawn(process.execPath, [upstreamScript], {
      env: { ...process.env, PORT: "0", HOST: "127.0.0.1", FAKE_TOOL_NAME: "list_files", FAKE_TOOL_ARGS: "{}" },
      stdio: ["ignore", "pipe", "inherit"],
    }),
    "fake upstream",
  );
  return new Promise((resolvePort, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("the fake upstream printed no port within 10 s")), 10_000);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (text) => {
      out += text;
      const nl = out.indexOf("\n");
      if (nl >= 0) {
        clearTimeout(timer);
        child.stdout.removeAllListeners("data");
        child.stdout.resume();
        resolvePort({ child, port: Number(out.slice(0, nl).trim()) });
      }
    });
    child.once("exit", () => reject(new Error("the fake upstream exited before printing its port")));
  });
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

async function waitForHealth(url, child, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the server exited (code ${child.exitCode}) before it was healthy`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url}/healthz did not answer 200 within ${ms} ms`);
}

/** CPU ms (utime + stime, 10 ms ticks) a process has used, from /proc; null where /proc is missing. */
function cpuMsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/**
 * Runs the load driver once; its output goes straight to ours; resolves with its --json
 * result, plus the fake upstream's CPU per run (warm-up runs included in the division).
 */
function load(label, args) {
  const jsonPath = join(tmp, `${label.replace(/\W+/g, "-")}.json`);
  const upstreamCpu0 = cpuMsOf(upstream.child.pid);
  return new Promise((resolveResult) => {
    const child = track(
      spawn(process.execPath, [loadScript, ...args, "--label", label, "--json", jsonPath], {
        stdio: ["ignore", "inherit", "inherit"],
      }),
      `load driver (${label})`,
    );
    child.expectedExit = true;
    child.once("exit", (code) => {
      let result = null;
      try {
        result = JSON.parse(readFileSync(jsonPath, "utf8"));
      } catch {
        // no result written
      }
      if (code !== 0) console.error(`  (load driver for ${label} exited ${code})`);
      const upstreamCpu1 = cpuMsOf(upstream.child.pid);
      if (result && upstreamCpu0 !== null && upstreamCpu1 !== null) {
        result.upstreamCpuMsPerRun = (upstreamCpu1 - upstreamCpu0) / (result.completed + (result.warmup ?? 0));
      }
      resolveResult(result);
    });
  });
}

// ---------- start ----------
const cpus = os.cpus();
console.log("bench:http: the server over HTTP/SSE vs the floor, fake upstream, loopback");
console.log(
  `  machine: ${cpus[0]?.model?.trim() ?? "unknown cpu"} x${cpus.length}, node ${process.version}, load average ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
console.log(`  fake upstream: ${upstreamScript}${useSharedUpstream ? "" : " (own fallback)"}`);
if (useSharedLoad) console.log(`  load driver:   ${loadScript}`);
else console.log(`  load driver:   ${sharedLoad} is missing (or BENCH_OWN_LOAD=1): using ${loadScript}`);
if (!existsSync(serverEntry)) fail(`${serverEntry} is missing: run \`npm run build\` (npm run bench:http does)`);

const upstream = await startUpstream().catch((err) => fail(err.message));
const upstreamUrl = `http://127.0.0.1:${upstream.port}/v1`;
const port = await freePort();
const serverArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
const server = track(
  spawn(process.execPath, [...serverArgs, serverEntry], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? tmp,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_PATH: join(tmp, "agent.db"),
      // Set: the server keeps everything in that PostgreSQL database instead of the SQLite file.
      ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
      WORKSPACE_ROOT: join(tmp, "workspaces"),
      OPENAI_BASE_URL: upstreamUrl,
      OPENAI_API_KEY: "bench-not-a-secret",
      OPENAI_MODEL: "fake-model",
      LOG_LEVEL: "warn",
      MAX_CONCURRENT_RUNS: String(Math.max(1000, C * 4)),
    },
    stdio: ["ignore", "inherit", "inherit"],
  }),
  "server",
);
const serverUrl = `http://127.0.0.1:${port}`;
await waitForHealth(serverUrl, server).catch((err) => fail(err.message));
const database = process.env.DATABASE_URL
  ? `PostgreSQL ${process.env.DATABASE_URL.replace(/^(\w+:\/\/[^:@/]*):[^@/]*@/, "$1@")} (its server's CPU is not counted below)`
  : join(tmp, "agent.db");
console.log(`  server: pid ${server.pid} at ${serverUrl} (${serverEntry}), database ${database}`);
console.log(`  upstream: pid ${upstream.child.pid} at ${upstreamUrl}; tool called: list_files {}`);
console.log(`  runs: C=1 n=${N1}, C=${C} n=${N25}, ${WARMUP} warm-up runs before each measurement`);
console.log("");

const common = (n, c) => ["--n", String(n), "--c", String(c), "--warmup", String(WARMUP)];
const floor1 = await load("floor C=1", ["--adapter", "floor", "--url", upstreamUrl, ...common(N1, 1)]);
const ours1 = await load(`${subject} C=1`, [
  "--adapter",
  "ours",
  "--url",
  serverUrl,
  "--pid",
  String(server.pid),
  ...common(N1, 1),
]);
const floorC = await load(`floor C=${C}`, ["--adapter", "floor", "--url", upstreamUrl, ...common(N25, C)]);
const oursC = await load(`${subject} C=${C}`, [
  "--adapter",
  "ours",
  "--url",
  serverUrl,
  "--pid",
  String(server.pid),
  ...common(N25, C),
]);

server.expectedExit = true;
upstream.child.expectedExit = true;
await stopChildren();

// ---------- summary ----------
const f = (x, digits = 1) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : "n/a");
const verdict = (ok) => (ok === null ? "n/a " : ok ? "MET " : "MISSED");
console.log("");
console.log("summary (targets from the issue; the peer keeps its state in memory, we commit every step to SQLite):");
const rows = [
  ["", "runs/s", "p50 run ms", "p95", "p99", "p50 ->last ev", "CPU ms/run", "RSS end MB", "upstream CPU"],
  ...[
    ["floor C=1", floor1],
    [`${subject} C=1`, ours1],
    [`floor C=${C}`, floorC],
    [`${subject} C=${C}`, oursC],
  ].map(([name, r]) => [
    name,
    f(r?.runsPerS),
    f(r?.runMs?.p50),
    f(r?.runMs?.p95),
    f(r?.runMs?.p99),
    f(r?.lastEvMs?.p50),
    f(r?.server?.cpuMsPerRun),
    f(r?.server?.rssMbEnd),
    f(r?.upstreamCpuMsPerRun, 2),
  ]),
];
for (const row of rows)
  console.log(
    `  ${row[0].padEnd(12)}${row
      .slice(1)
      .map((c) => c.padStart(14))
      .join("")}`,
  );
console.log("");

const tput = oursC?.runsPerS;
const tputOk = typeof tput === "number" ? tput >= PEER_RUNS_PER_S[1] * 10 : null;
console.log(
  `  [${verdict(tputOk)}] throughput at C=${C}: ${f(tput)} runs/s; target >= ${PEER_RUNS_PER_S[0] * 10}-${PEER_RUNS_PER_S[1] * 10} ` +
    `(10x the peer's ${PEER_RUNS_PER_S.join("-")}); ${f(tput / PEER_RUNS_PER_S[1])}x-${f(tput / PEER_RUNS_PER_S[0])}x the peer; ` +
    `the floor did ${f(floorC?.runsPerS)} runs/s`,
);
for (const [name, r] of [
  ["C=1", ours1],
  [`C=${C}`, oursC],
]) {
  const cpu = r?.server?.cpuMsPerRun;
  const ok = typeof cpu === "number" ? cpu <= TARGET_CPU_MS_PER_RUN : null;
  console.log(
    `  [${verdict(ok)}] server CPU per run at ${name}: ${f(cpu)} ms; target <= ${TARGET_CPU_MS_PER_RUN} ms` +
      " (from /proc utime+stime at 10 ms ticks, divided by the runs)",
  );
}
const gap = ours1 && floor1 ? ours1.runMs.p50 - floor1.runMs.p50 : null;
const gapOk = gap === null ? null : gap <= TARGET_P50_OVER_FLOOR_MS;
console.log(
  `  [${verdict(gapOk)}] p50 at C=1 over the floor: ${f(gap)} ms (${subject} ${f(ours1?.runMs?.p50)} ms from POST /runs to the stream's end, ` +
    `floor ${f(floor1?.runMs?.p50)} ms for the two model requests); target <= ${TARGET_P50_OVER_FLOOR_MS} ms. ` +
    `Create session p50 ${f(ours1?.createMs?.p50)} ms is not included; to the last event: ${f(
      ours1 && floor1 ? ours1.lastEvMs.p50 - floor1.lastEvMs.p50 : null,
    )} ms over the floor`,
);
console.log(
  `  server RSS: ${f(ours1?.server?.rssMbStart)} MB before C=1, ${f(oursC?.server?.rssMbEnd)} MB after C=${C} ` +
    `(peak sampled ${f(oursC?.server?.rssMbPeakSampled)} MB, VmHWM ${f(oursC?.server?.hwmMb)} MB)`,
);
console.log(
  `  for scale: the fake upstream (node:http, no framework) spent ${f(floorC?.upstreamCpuMsPerRun, 2)} ms CPU per run serving ` +
    "the run's two streamed model requests (last column: upstream CPU ms per run, warm-up runs included)",
);
const failed = [floor1, ours1, floorC, oursC].some((r) => !r || r.errors > 0);
if (failed) console.log("  some measurements had failed runs or no result: see the driver output above");
cleanup();
process.exit(failed ? 1 : 0);
