#!/usr/bin/env node
// `npm run bench:stream` (builds first): C concurrent runs, each streaming BENCH_TOKENS (200)
// tokens at one per BENCH_TOKEN_MS (20) after one list_files call, for C growing until the
// token p99 (upstream send -> client receive) of the last subject passes BENCH_P99_MS (50). At
// each C, in alternation, BENCH_REPS (3) times: the floor (a client reading the fake upstream
// directly), the stack fixture (bench/stack-floor-server.mjs: the same libraries, deltas
// forwarded at once, nothing stored), the same fixture storing each delta before sending it
// ("stored", FIXTURE_STORE_DELTAS=1: the floor for a server that keeps every event) and our
// server ("ours", over SQLite). Opt-in (BENCH_SUBJECTS): "pg1", "pg2" (pgN: N instances of our
// server over one throwaway PostgreSQL, bench/postgres.mjs, each its own database; the load
// client alternates the runs between the instances, no balancer in between), with
// PostgreSQL's own CPU per run beside the servers'. Medians over the repetitions; the server
// CPU per run is from /proc of the server processes (summed over pgN's instances; 10 ms ticks)
// over BENCH_RUNS_PER_C (2) waves of C runs. A benchmark, not a test: it prints figures and a
// last summary line.
//
// Env: BENCH_CS ("100,200,300,500,700,1000"), BENCH_REPS, BENCH_TOKENS, BENCH_TOKEN_MS,
//   BENCH_P99_MS, BENCH_RUNS_PER_C, BENCH_SUBJECTS (comma-separated, of floor, stack, stored,
//   sdk, base, ours, pg1, pg2, ...: measured in that order, the last one gating C; default
//   floor, stack, stored, base with BENCH_BASE_ROOT, ours; sdk is the stack fixture on the
//   SDK's chunk iterator), BENCH_ALL=1 (measure every C listed, past the first failing one), BENCH_SERVER_ENV (extra env for our server, every instance of it,
//   "K=V K2=V2"), BENCH_SERVER_NODE_ARGS (likewise), BENCH_FIXTURE_NODE_ARGS (node flags for the
//   fixtures, e.g. "--cpu-prof --cpu-prof-dir=DIR"), BENCH_KEEP_TMP=1, BENCH_BASE_ROOT (another
//   built checkout: its server is measured too, as "base", in the same alternation),
//   BENCH_BASE_ENV (extra env for that one: the same checkout with another setting, e.g.
//   "GROUP_COMMIT_MS=0"), PG_BIN (PostgreSQL's binaries). Everything on 127.0.0.1.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createHarness, envInt, envPairs, fmt, machineLine, machineLoad, median, root } from "./harness.mjs";
import { startInstancesOverPg, startPostgres } from "./postgres.mjs";
import { printSummary } from "./stream-summary.mjs";

const CS = (process.env.BENCH_CS ?? "100,200,300,500,700,1000").split(",").map(Number);
const REPS = envInt("BENCH_REPS", 3);
const TOKENS = envInt("BENCH_TOKENS", 200);
const TOKEN_MS = envInt("BENCH_TOKEN_MS", 20);
const P99_MS = envInt("BENCH_P99_MS", 50);
const WAVES = envInt("BENCH_RUNS_PER_C", 2);
const extraEnv = envPairs(process.env.BENCH_SERVER_ENV);

const h = createHarness("bench-stream");
const oursEntry = join(root, "dist/src/server.js");
if (!existsSync(oursEntry)) h.fail(`${oursEntry} is missing: run \`npm run build\` (npm run bench:stream does)`);
console.log(`bench:stream: C runs streaming ${TOKENS} tokens at one per ${TOKEN_MS} ms after one list_files call`);
console.log(`  ${machineLine()}`);

/** The instances of pgN (N of our server over one PostgreSQL); 0 for any other subject. */
const pgInstances = (subject) => Number(/^pg([1-9]\d?)$/.exec(subject)?.[1] ?? 0);
/** Every subject but pgN, in the order measured; sdk only when named in BENCH_SUBJECTS. */
const SUBJECT_ORDER = ["floor", "stack", "stored", "sdk", "base", "ours"];
const DEFAULT_SUBJECTS = SUBJECT_ORDER.filter((s) => s !== "sdk" && (s !== "base" || process.env.BENCH_BASE_ROOT));
const requested = process.env.BENCH_SUBJECTS?.split(",").filter(Boolean);
for (const subject of requested ?? []) {
  if (!SUBJECT_ORDER.includes(subject) && !pgInstances(subject))
    h.fail(`BENCH_SUBJECTS: unknown subject ${subject} (${SUBJECT_ORDER.join(", ")}, pg1, pg2, ...)`);
  if (subject === "base" && !process.env.BENCH_BASE_ROOT) h.fail("BENCH_SUBJECTS names base: set BENCH_BASE_ROOT");
}
// In this order, whatever the order of BENCH_SUBJECTS: the last one gates the growing of C.
const SUBJECTS = requested
  ? [
      ...SUBJECT_ORDER.filter((s) => requested.includes(s)),
      ...[...new Set(requested.filter(pgInstances))].sort((x, y) => pgInstances(x) - pgInstances(y)),
    ]
  : DEFAULT_SUBJECTS;

const upstream = await h
  .startStreamingUpstream({ tokens: TOKENS, intervalMs: TOKEN_MS })
  .catch((err) => h.fail(err.message));
const serverEnv = { MAX_CONCURRENT_RUNS: "100000", ...extraEnv };
const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
/** Each server subject: its processes' URLs and pids (several for instances over one PostgreSQL). */
const servers = {};
const add = (subject, started) => {
  servers[subject] = { urls: started.map((s) => s.url), pids: started.map((s) => s.child.pid) };
};
const fixture = (label, env) =>
  h.startServer({
    entry: join(root, "bench/stack-floor-server.mjs"),
    label,
    upstreamUrl: upstream.url,
    env,
    nodeArgs: process.env.BENCH_FIXTURE_NODE_ARGS?.split(/\s+/).filter(Boolean),
  });
if (SUBJECTS.includes("stack")) add("stack", [await fixture("stack")]);
// The same fixture storing every text delta before sending it (grouped as our store does):
// the floor for a server whose every event is stored.
if (SUBJECTS.includes("stored")) add("stored", [await fixture("stored", { FIXTURE_STORE_DELTAS: "1" })]);
// The stack fixture as it was first measured: the SDK's chunk iterator, not the raw response
// read with our parser (the parts our server uses).
if (SUBJECTS.includes("sdk")) add("sdk", [await fixture("sdk", { FIXTURE_SDK_ITERATOR: "1" })]);
if (SUBJECTS.includes("ours") || SUBJECTS.includes("base")) {
  const started = await h.startOurs({ upstreamUrl: upstream.url, env: serverEnv, nodeArgs });
  for (const [subject, server] of Object.entries(started)) add(subject, [server]);
}
const pg = SUBJECTS.some(pgInstances) ? startPostgres(h) : null;
for (const subject of SUBJECTS.filter(pgInstances)) {
  add(
    subject,
    await startInstancesOverPg({
      h,
      pg,
      db: `bench_stream_${subject}`,
      label: subject,
      count: pgInstances(subject),
      upstreamUrl: upstream.url,
      env: serverEnv,
      nodeArgs,
    }),
  );
}
console.log(
  `  upstream pid ${upstream.child.pid}, ${Object.entries(servers)
    .map(([name, s]) => `${name} pid ${s.pids.join(",")}`)
    .join(", ")}${pg ? `, PostgreSQL postmaster pid ${pg.postmaster}` : ""}`,
);
if (Object.keys(extraEnv).length) console.log(`  our server's extra env: ${JSON.stringify(extraEnv)}`);

const loadScript = join(root, "bench/mini-load.mjs");
/**
 * One measurement of `subject` at concurrency `c`: the driver's result, with
 * `pgCpuMsPerRun` (PostgreSQL's CPU over the measurement per completed run) for pgN.
 */
async function measure(subject, c, n = c * WAVES) {
  const common = ["--n", String(n), "--c", String(c), "--warmup", "0", "--tokens", "1"];
  if (subject === "floor")
    return h.runLoad(loadScript, `floor C=${c}`, ["--adapter", "floor", "--url", upstream.url, ...common]);
  const { urls, pids } = servers[subject];
  const pg0 = pgInstances(subject) ? pg.cpuMs() : null;
  const result = await h.runLoad(loadScript, `${subject} C=${c}`, [
    ...["--adapter", "ours", "--url", urls.join(","), "--pid", pids.join(",")],
    ...common,
  ]);
  if (result && pg0 !== null) result.pgCpuMsPerRun = result.ok ? (pg.cpuMs() - pg0) / result.ok : Number.NaN;
  return result;
}

// Warm-up: each subject's code paths compiled before anything is measured.
for (const subject of SUBJECTS) await measure(subject, 20, 20);
console.log("");

const load1 = () => machineLoad().split(" ")[0];
const table = [];
for (const c of CS) {
  const loadBefore = load1();
  const reps = Object.fromEntries(SUBJECTS.map((s) => [s, []]));
  for (let rep = 0; rep < REPS; rep++) {
    // Rotated per repetition, so no subject always runs first after a pause.
    for (let k = 0; k < SUBJECTS.length; k++) {
      const subject = SUBJECTS[(k + rep) % SUBJECTS.length];
      reps[subject].push(await measure(subject, c));
    }
  }
  // Subjects not measured print as "-" or n/a.
  const row = { c, load: `${loadBefore}-${load1()}`, ...Object.fromEntries(DEFAULT_SUBJECTS.map((s) => [s, {}])) };
  for (const subject of SUBJECTS) {
    const results = reps[subject];
    row[subject] = {
      p50: median(results.map((r) => r?.tokenMs?.p50)),
      p99: median(results.map((r) => r?.tokenMs?.p99)),
      cpuMsPerRun: median(results.map((r) => r?.server?.cpuMsPerRun)),
      pgCpuMsPerRun: median(results.map((r) => r?.pgCpuMsPerRun)),
      errors: results.reduce((sum, r) => sum + (r ? r.errors : c * WAVES), 0),
    };
  }
  table.push(row);
  const each = (key) => SUBJECTS.filter((s) => s !== "floor" || key === "p99").map((s) => `${s} ${fmt(row[s][key])}`);
  console.log(
    `== C=${c}: token p99 ${each("p99").join(" / ")} ms; CPU per run ${each("cpuMsPerRun").join(" / ")} ms` +
      `${
        SUBJECTS.some(pgInstances)
          ? `; PostgreSQL CPU per run ${SUBJECTS.filter(pgInstances)
              .map((s) => `${s} ${fmt(row[s].pgCpuMsPerRun)}`)
              .join(" / ")} ms`
          : ""
      }` +
      ` (medians of ${REPS}); load average ${row.load}\n`,
  );
  const gate = row[SUBJECTS.at(-1)];
  if ((!(gate.p99 <= P99_MS) || gate.errors > 0) && process.env.BENCH_ALL !== "1") break;
}
await h.stop();
printSummary({ table, subjects: SUBJECTS, pgInstances, p99Ms: P99_MS });
h.cleanup();
