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
//   BENCH_PIN=1 (each server on the machine's last CPU, the upstream and the load driver on the
//   others, with taskset: see nodeCommand in harness.mjs),
//   DATABASE_URL (postgres://...: the server over that PostgreSQL database instead of a temp SQLite file),
//   BENCH_SERVER_ENTRY (the server script, relative to the repo root; default dist/src/server.js;
//   bench/stack-floor-server.mjs measures the stack floor: the same libraries, no product logic),
//   BENCH_ALTERNATE (a number of rounds: our server, the stack fixture and, with BENCH_BASE_ROOT
//   set to another built checkout, its server, measured in turn at C=BENCH_C in each round;
//   the final summary line gives our runs/s and CPU per run as ratios of the fixture's;
//   see bench/http-alternate.mjs).
// Profiling the server under this load:
//   BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node bench/http.mjs
//   node bench/cpuprofile-top.mjs /tmp/prof/*.cpuprofile
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { cpuMsOf, createHarness, envInt, machineLine, root } from "./harness.mjs";
import { alternate } from "./http-alternate.mjs";

const N1 = envInt("BENCH_N1", 200);
const N25 = envInt("BENCH_N25", 500);
const C = envInt("BENCH_C", 25);
const WARMUP = envInt("BENCH_WARMUP", 50);
const ALTERNATE = envInt("BENCH_ALTERNATE", 0);

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

const h = createHarness("bench-http");
const { fail, cleanup } = h;

/**
 * Runs the load driver once; its output goes straight to ours; resolves with its --json
 * result, plus the fake upstream's CPU per run (warm-up runs included in the division).
 */
async function load(label, args) {
  const upstreamCpu0 = cpuMsOf(upstream.child.pid);
  const result = await h.runLoad(loadScript, label, args);
  const upstreamCpu1 = cpuMsOf(upstream.child.pid);
  if (result && upstreamCpu0 !== null && upstreamCpu1 !== null) {
    result.upstreamCpuMsPerRun = (upstreamCpu1 - upstreamCpu0) / (result.completed + (result.warmup ?? 0));
  }
  return result;
}

// ---------- start ----------
console.log("bench:http: the server over HTTP/SSE vs the floor, fake upstream, loopback");
console.log(`  ${machineLine()}`);
console.log(`  fake upstream: ${upstreamScript}${useSharedUpstream ? "" : " (own fallback)"}`);
if (useSharedLoad) console.log(`  load driver:   ${loadScript}`);
else console.log(`  load driver:   ${sharedLoad} is missing (or BENCH_OWN_LOAD=1): using ${loadScript}`);
if (!existsSync(serverEntry)) fail(`${serverEntry} is missing: run \`npm run build\` (npm run bench:http does)`);

const upstream = await h
  .startUpstream(upstreamScript, { FAKE_TOOL_NAME: "list_files", FAKE_TOOL_ARGS: "{}" })
  .catch((err) => fail(err.message));
const upstreamUrl = upstream.url;
const serverArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
const common = (n, c) => ["--n", String(n), "--c", String(c), "--warmup", String(WARMUP)];

if (ALTERNATE > 0) {
  const ok = await alternate({
    h,
    rounds: ALTERNATE,
    c: C,
    upstreamUrl,
    env: { MAX_CONCURRENT_RUNS: String(Math.max(1000, C * 4)) },
    nodeArgs: serverArgs,
    load: (label, server) =>
      load(label, ["--adapter", "ours", "--url", server.url, "--pid", String(server.child.pid), ...common(N25, C)]),
  });
  await h.stop();
  cleanup();
  process.exit(ok ? 0 : 1);
}
const started = await h
  .startServer({
    entry: serverEntry,
    label: "server",
    upstreamUrl,
    nodeArgs: serverArgs,
    env: {
      // Set: the server keeps everything in that PostgreSQL database instead of the SQLite file.
      ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
      MAX_CONCURRENT_RUNS: String(Math.max(1000, C * 4)),
    },
  })
  .catch((err) => fail(err.message));
const server = started.child;
const serverUrl = started.url;
const database = process.env.DATABASE_URL
  ? `PostgreSQL ${process.env.DATABASE_URL.replace(/^(\w+:\/\/[^:@/]*):[^@/]*@/, "$1@")} (its server's CPU is not counted below)`
  : started.dbPath;
console.log(`  server: pid ${server.pid} at ${serverUrl} (${serverEntry}), database ${database}`);
console.log(`  upstream: pid ${upstream.child.pid} at ${upstreamUrl}; tool called: list_files {}`);
console.log(`  runs: C=1 n=${N1}, C=${C} n=${N25}, ${WARMUP} warm-up runs before each measurement`);
console.log("");

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

await h.stop();

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
