#!/usr/bin/env node
// `npm run bench:stream` (builds first): C concurrent runs, each streaming BENCH_TOKENS (200)
// tokens at one per BENCH_TOKEN_MS (20) after one list_files call, for C growing until our
// token p99 (upstream send -> client receive) passes BENCH_P99_MS (50). At each C, in
// alternation, BENCH_REPS (3) times: the floor (a client reading the fake upstream
// directly), the stack fixture (bench/stack-floor-server.mjs: the same libraries, deltas
// forwarded at once, nothing stored), the same fixture storing each delta before sending it
// ("stored", FIXTURE_STORE_DELTAS=1: the floor for a server that keeps every event) and our server. Medians over the repetitions; the
// server CPU per run is from /proc of the server child (10 ms ticks) over BENCH_RUNS_PER_C
// (2) waves of C runs. A benchmark, not a test: it prints figures and a last summary line.
//
// Env: BENCH_CS ("100,200,300,500,700,1000"), BENCH_REPS, BENCH_TOKENS, BENCH_TOKEN_MS,
//   BENCH_P99_MS, BENCH_RUNS_PER_C, BENCH_SUBJECTS (a comma-separated subset of floor, stack, stored, base, ours), BENCH_ALL=1 (measure every C listed, past the first failing one), BENCH_SERVER_ENV (extra env for our server, "K=V K2=V2"),
//   BENCH_SERVER_NODE_ARGS, BENCH_KEEP_TMP=1, BENCH_BASE_ROOT (another built checkout: its server
//   is measured too, as "base", in the same alternation), BENCH_BASE_ENV (extra env for that one:
//   the same checkout with another setting, e.g. "GROUP_COMMIT_MS=0"). Everything on 127.0.0.1.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createHarness, envInt, envPairs, fmt, machineLine, machineLoad, median, root } from "./harness.mjs";

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

const upstream = await h
  .startStreamingUpstream({ tokens: TOKENS, intervalMs: TOKEN_MS })
  .catch((err) => h.fail(err.message));
const serverEnv = { MAX_CONCURRENT_RUNS: "100000", ...extraEnv };
const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
const servers = {
  stack: await h.startServer({
    entry: join(root, "bench/stack-floor-server.mjs"),
    label: "stack",
    upstreamUrl: upstream.url,
  }),
  // The same fixture storing every text delta before sending it (grouped as our store does):
  // the floor for a server whose every event is stored.
  stored: await h.startServer({
    entry: join(root, "bench/stack-floor-server.mjs"),
    label: "stored",
    upstreamUrl: upstream.url,
    env: { FIXTURE_STORE_DELTAS: "1" },
  }),
  ...(await h.startOurs({ upstreamUrl: upstream.url, env: serverEnv, nodeArgs })),
};
const ALL_SUBJECTS = ["floor", "stack", "stored", ...(servers.base ? ["base"] : []), "ours"];
// BENCH_SUBJECTS: only these (e.g. "floor": what the client and the fake upstream alone reach here).
const only = process.env.BENCH_SUBJECTS?.split(",").filter(Boolean);
const SUBJECTS = only ? ALL_SUBJECTS.filter((s) => only.includes(s)) : ALL_SUBJECTS;
console.log(
  `  upstream pid ${upstream.child.pid}, ${Object.entries(servers)
    .map(([name, s]) => `${name} pid ${s.child.pid}`)
    .join(", ")}`,
);
if (Object.keys(extraEnv).length) console.log(`  our server's extra env: ${JSON.stringify(extraEnv)}`);

const loadScript = join(root, "bench/mini-load.mjs");
/** One measurement of `subject` at concurrency `c`: the driver's result. */
function measure(subject, c, n = c * WAVES) {
  const common = ["--n", String(n), "--c", String(c), "--warmup", "0", "--tokens", "1"];
  if (subject === "floor")
    return h.runLoad(loadScript, `floor C=${c}`, ["--adapter", "floor", "--url", upstream.url, ...common]);
  const server = servers[subject];
  return h.runLoad(loadScript, `${subject} C=${c}`, [
    "--adapter",
    "ours",
    "--url",
    server.url,
    "--pid",
    String(server.child.pid),
    ...common,
  ]);
}

// Warm-up: each subject's code paths compiled before anything is measured.
for (const subject of SUBJECTS) await measure(subject, 20, 20);
console.log("");

const table = [];
for (const c of CS) {
  const reps = Object.fromEntries(SUBJECTS.map((s) => [s, []]));
  for (let rep = 0; rep < REPS; rep++) {
    // Rotated per repetition, so no subject always runs first after a pause.
    for (let k = 0; k < SUBJECTS.length; k++) {
      const subject = SUBJECTS[(k + rep) % SUBJECTS.length];
      reps[subject].push(await measure(subject, c));
    }
  }
  // Subjects not measured (BENCH_SUBJECTS) print as "-".
  const row = { c, ...Object.fromEntries(ALL_SUBJECTS.map((subject) => [subject, {}])) };
  for (const subject of SUBJECTS) {
    const results = reps[subject];
    row[subject] = {
      p50: median(results.map((r) => r?.tokenMs?.p50)),
      p99: median(results.map((r) => r?.tokenMs?.p99)),
      cpuMsPerRun: median(results.map((r) => r?.server?.cpuMsPerRun)),
      errors: results.reduce((sum, r) => sum + (r ? r.errors : c * WAVES), 0),
    };
  }
  table.push(row);
  console.log(
    `== C=${c}: token p99 floor ${fmt(row.floor.p99)} / stack ${fmt(row.stack.p99)} / stored ${fmt(row.stored.p99)} / ours ${fmt(row.ours.p99)} ms; ` +
      `CPU per run stack ${fmt(row.stack.cpuMsPerRun)} / stored ${fmt(row.stored.cpuMsPerRun)} / ours ${fmt(row.ours.cpuMsPerRun)} ms (medians of ${REPS})` +
      `${row.base ? `; base p99 ${fmt(row.base.p99)} ms, CPU per run ${fmt(row.base.cpuMsPerRun)} ms` : ""}\n`,
  );
  // Growing C stops once the last subject measured (ours, unless BENCH_SUBJECTS) passes the p99 aim.
  const gate = row[SUBJECTS.at(-1)];
  if ((!(gate.p99 <= P99_MS) || gate.errors > 0) && process.env.BENCH_ALL !== "1") break;
}
await h.stop();

console.log("summary (token latency = upstream send -> client receive; medians over the repetitions):");
console.log(
  `  ${"C".padStart(6)}${[
    "floor p50",
    "p99",
    "stack p50",
    "p99",
    "ours p50",
    "p99",
    "stored p99",
    "stack CPU/run",
    "stored CPU/run",
    "ours CPU/run",
    "ours/stack",
    "ours/stored",
    "errors s/o",
  ]
    .map((x) => x.padStart(15))
    .join("")}`,
);
for (const r of table) {
  console.log(
    `  ${String(r.c).padStart(6)}${[
      fmt(r.floor.p50),
      fmt(r.floor.p99),
      fmt(r.stack.p50),
      fmt(r.stack.p99),
      fmt(r.ours.p50),
      fmt(r.ours.p99),
      fmt(r.stored.p99),
      fmt(r.stack.cpuMsPerRun),
      fmt(r.stored.cpuMsPerRun),
      fmt(r.ours.cpuMsPerRun),
      fmt(r.ours.cpuMsPerRun / r.stack.cpuMsPerRun, 2),
      fmt(r.ours.cpuMsPerRun / r.stored.cpuMsPerRun, 2),
      `${r.stack.errors ?? "-"}/${r.ours.errors ?? "-"}`,
    ]
      .map((x) => x.padStart(15))
      .join("")}`,
  );
}
if (servers.base) {
  console.log("  base (BENCH_BASE_ROOT), measured in the same alternation:");
  for (const r of table) {
    console.log(
      `  ${String(r.c).padStart(6)}  base p50 ${fmt(r.base.p50)} p99 ${fmt(r.base.p99)} ms, CPU/run ${fmt(r.base.cpuMsPerRun)} ms ` +
        `(${fmt(r.base.cpuMsPerRun / r.stack.cpuMsPerRun, 2)}x the stack; ours/base ${fmt(r.ours.cpuMsPerRun / r.base.cpuMsPerRun, 2)}), errors ${r.base.errors}`,
    );
  }
}
const passing = table.filter((r) => r.ours.p99 <= P99_MS && r.ours.errors === 0);
const best = passing.at(-1);
const first = table[0];
const over = table.find((r) => !(r.ours.p99 <= P99_MS) || r.ours.errors > 0);
console.log(
  `bench:stream: largest C with our token p99 <= ${P99_MS} ms: ${best ? best.c : "none"}` +
    `${over ? ` (C=${over.c}: p99 ${fmt(over.ours.p99)} ms, ${over.ours.errors} errors)` : " (the largest measured)"}; ` +
    `at C=${first.c} p99 ours ${fmt(first.ours.p99)} / stack ${fmt(first.stack.p99)} / floor ${fmt(first.floor.p99)} ms, ` +
    `CPU per run ours ${fmt(first.ours.cpuMsPerRun)} / stack ${fmt(first.stack.cpuMsPerRun)} ms (${fmt(first.ours.cpuMsPerRun / first.stack.cpuMsPerRun, 2)}x)` +
    ` / stack storing deltas ${fmt(first.stored.cpuMsPerRun)} ms (${fmt(first.ours.cpuMsPerRun / first.stored.cpuMsPerRun, 2)}x)` +
    `${first.base ? `, base ${fmt(first.base.cpuMsPerRun)} ms (p99 ${fmt(first.base.p99)})` : ""}; load average ${machineLoad()}`,
);
h.cleanup();
