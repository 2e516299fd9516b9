#!/usr/bin/env node
// `npm run bench:cluster` (builds first): the zero-latency workload of bench:http (a session
// plus a streamed run with one list_files call, C concurrent runs) against, in one sitting:
// the server over SQLite, one instance over PostgreSQL, and three instances over the same
// PostgreSQL behind a round-robin TCP balancer. Prints runs/s, p50/p99 and CPU per run: the
// server processes' (all instances summed) and PostgreSQL's own (its postmaster and backends).
// A benchmark, not a test. Everything runs on 127.0.0.1 and is stopped at the end.
//
// PostgreSQL: a throwaway cluster in a temp dir (bench/postgres.mjs: PostgreSQL 15, PG_BIN,
// fsync on, synchronous_commit off). Env: BENCH_N (500 runs per measurement), BENCH_C (25), BENCH_WARMUP (50),
// BENCH_ROUNDS (3: the scenarios alternate, medians are printed).
import net from "node:net";
import { join } from "node:path";
import { cpuMsOf, createHarness, envInt, fmt, machineLine, median, root } from "./harness.mjs";
import { startInstancesOverPg, startPostgres } from "./postgres.mjs";

const N = envInt("BENCH_N", 500);
const C = envInt("BENCH_C", 25);
const WARMUP = envInt("BENCH_WARMUP", 50);
const ROUNDS = envInt("BENCH_ROUNDS", 3);
const h = createHarness("bench-cluster");

/** A TCP balancer: each new connection goes to the next port in turn (as a load balancer would). */
async function startBalancer(ports) {
  let next = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(ports[next++ % ports.length], "127.0.0.1");
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close);
    upstream.on("error", close);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { port: server.address().port, close: () => new Promise((r) => server.close(r)) };
}

async function measure(scenario, pg, upstreamUrl, round) {
  const label = `${scenario.name}-${round}`;
  const env = {
    WORKSPACE_ROOT: join(h.tmp, `ws-${label}`),
    MAX_CONCURRENT_RUNS: "1000",
    // list_files needs no shell; the sandbox's probe at start is left out of the figures.
    SHELL_SANDBOX: "off",
  };
  const servers = scenario.pg
    ? await startInstancesOverPg({
        h,
        pg,
        db: `bench_${label.replace(/\W+/g, "_")}`,
        label,
        count: scenario.instances,
        upstreamUrl,
        env,
      })
    : [await h.startServer({ entry: join(root, "dist/src/server.js"), label, upstreamUrl, env })];
  const ports = servers.map((s) => Number(new URL(s.url).port));
  const balancer = servers.length > 1 ? await startBalancer(ports) : null;
  const url = `http://127.0.0.1:${balancer ? balancer.port : ports[0]}`;
  const serverCpu = () => servers.reduce((sum, s) => sum + (cpuMsOf(s.child.pid) ?? 0), 0);
  const serverCpu0 = serverCpu();
  const pgCpu0 = scenario.pg ? pg.cpuMs() : 0;
  const result = await h.runLoad(join(root, "bench/mini-load.mjs"), label, [
    ...["--adapter", "ours", "--url", url],
    ...["--n", String(N), "--c", String(C), "--warmup", String(WARMUP)],
  ]);
  const serverMs = serverCpu() - serverCpu0;
  const pgMs = scenario.pg ? pg.cpuMs() - pgCpu0 : 0;
  await balancer?.close();
  await h.stop(servers.map((s) => s.child));
  if (!result || result.ok !== result.completed) h.fail(`${label}: runs failed (${JSON.stringify(result)})`);
  const runs = result.completed + (result.warmup ?? 0);
  return {
    runsPerS: result.runsPerS,
    p50: result.totalMs.p50,
    p99: result.totalMs.p99,
    serverCpuMsPerRun: serverMs / runs,
    pgCpuMsPerRun: pgMs / runs,
  };
}

console.log(`bench:cluster: C=${C}, n=${N} (+${WARMUP} warm-up) per measurement, ${ROUNDS} rounds`);
console.log(`  ${machineLine()}`);
const pg = startPostgres(h);
const upstream = await h.startUpstream(join(root, "bench/fake-upstream.mjs"), {
  FAKE_TOOL_NAME: "list_files",
  FAKE_TOOL_ARGS: "{}",
});
const scenarios = [
  { name: "sqlite", pg: false, instances: 1 },
  { name: "pg-1", pg: true, instances: 1 },
  { name: "pg-3", pg: true, instances: 3 },
];
const results = Object.fromEntries(scenarios.map((s) => [s.name, []]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const scenario of scenarios) {
    const r = await measure(scenario, pg, upstream.url, round);
    results[scenario.name].push(r);
    console.log(
      `  ${scenario.name.padEnd(7)} round ${round}: ${fmt(r.runsPerS)} runs/s, p50 ${fmt(r.p50)} ms, p99 ${fmt(r.p99)} ms, server CPU ${fmt(r.serverCpuMsPerRun, 2)} ms/run, PostgreSQL CPU ${fmt(r.pgCpuMsPerRun, 2)} ms/run`,
    );
  }
}
console.log("");
const summary = {};
for (const { name } of scenarios) {
  const rs = results[name];
  const m = (key) => median(rs.map((r) => r[key]));
  summary[name] = {
    runsPerS: m("runsPerS"),
    p50: m("p50"),
    p99: m("p99"),
    server: m("serverCpuMsPerRun"),
    pg: m("pgCpuMsPerRun"),
  };
  const s = summary[name];
  console.log(
    `  median ${name.padEnd(7)}: ${fmt(s.runsPerS)} runs/s, p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms, CPU/run server ${fmt(s.server, 2)} ms + PostgreSQL ${fmt(s.pg, 2)} ms`,
  );
}
const ratio = summary["pg-1"].server / summary.sqlite.server;
console.log(
  `bench:cluster summary: sqlite ${fmt(summary.sqlite.runsPerS)} runs/s ${fmt(summary.sqlite.server, 2)} ms CPU/run; pg x1 ${fmt(summary["pg-1"].runsPerS)} runs/s ${fmt(summary["pg-1"].server, 2)} ms (+${fmt(summary["pg-1"].pg, 2)} ms PostgreSQL) = ${fmt(ratio, 2)}x SQLite's server CPU (aim <= 2x); pg x3 ${fmt(summary["pg-3"].runsPerS)} runs/s ${fmt(summary["pg-3"].server, 2)} ms (+${fmt(summary["pg-3"].pg, 2)} ms PostgreSQL)`,
);
await h.stop();
h.cleanup();
process.exit(0);
