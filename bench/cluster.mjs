#!/usr/bin/env node
// `npm run bench:cluster` (builds first): the zero-latency workload of bench:http (a session
// plus a streamed run with one list_files call, C concurrent runs) against, in one sitting:
// the server over SQLite, one instance over PostgreSQL, and three instances over the same
// PostgreSQL behind a round-robin TCP balancer. Prints runs/s, p50/p99 and CPU per run: the
// server processes' (all instances summed) and PostgreSQL's own (its postmaster and backends).
// A benchmark, not a test. Everything runs on 127.0.0.1 and is stopped at the end.
//
// PostgreSQL: a throwaway cluster in a temp dir (Debian's PostgreSQL 15, PG_BIN; as root it
// runs as the `postgres` user), fsync on, synchronous_commit off (like SQLite's WAL with
// synchronous=NORMAL: a crash of the database's host may lose the last commits, never
// corrupts). Env: BENCH_N (500 runs per measurement), BENCH_C (25), BENCH_WARMUP (50),
// BENCH_ROUNDS (3: the scenarios alternate, medians are printed).
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const envInt = (name, fallback) => Number(process.env[name] ?? fallback);
const N = envInt("BENCH_N", 500);
const C = envInt("BENCH_C", 25);
const WARMUP = envInt("BENCH_WARMUP", 50);
const ROUNDS = envInt("BENCH_ROUNDS", 3);
const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

const tmp = mkdtempSync(join(os.tmpdir(), "bench-cluster-"));
const children = new Set();
const cleanups = [];
let cleaned = false;
function cleanup() {
  if (cleaned) return;
  cleaned = true;
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  for (const fn of cleanups.reverse()) {
    try {
      fn();
    } catch {
      // best effort
    }
  }
  rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU ms (utime + stime) of a process from /proc; 0 once it is gone. */
function cpuMsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return 0;
  }
}

/** The postmaster and every process it started (backends, writers): PostgreSQL's whole CPU. */
function pgCpuMs(postmaster) {
  let total = cpuMsOf(postmaster);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === postmaster) total += cpuMsOf(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

function startPostgres() {
  const dir = join(tmp, "pg");
  mkdirSync(dir);
  const asRoot = process.getuid?.() === 0;
  const run = (bin, args) =>
    execFileSync(
      asRoot ? "runuser" : join(PG_BIN, bin),
      asRoot ? ["-u", "postgres", "--", join(PG_BIN, bin), ...args] : args,
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
  if (asRoot) {
    const id = (flag) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    // The cluster's user reaches its directory (and nothing else here).
    chmodSync(tmp, 0o711);
    chownSync(dir, id("-u"), id("-g"));
  }
  const data = join(dir, "data");
  const user = asRoot ? "postgres" : (process.env.USER ?? "postgres");
  run("initdb", ["-D", data, "-U", user, "-A", "trust", "-E", "UTF8", "--locale", "C"]);
  const options = `-c listen_addresses='' -c unix_socket_directories=${dir} -c synchronous_commit=off -c max_connections=200`;
  run("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options, "-w", "start"]);
  cleanups.push(() => run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]));
  const postmaster = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
  const url = (db) => `postgres://${user}@localhost/${db}?host=${dir}`;
  const createDb = (name) => run("psql", ["-h", dir, "-U", user, "-d", "postgres", "-qc", `CREATE DATABASE ${name}`]);
  return { postmaster, url, createDb };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Spawns `script` and resolves with the child once its first stdout line (a port) is printed. */
function spawnWithPort(script, env) {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (text) => {
      out += text;
      if (out.includes("\n")) {
        child.stdout.removeAllListeners("data");
        child.stdout.resume();
        resolve({ child, port: Number(out.split("\n")[0]) });
      }
    });
    child.once("exit", () => reject(new Error(`${script} exited before printing its port`)));
  });
}

async function startInstance(name, { databaseUrl, workspaces, upstreamUrl }) {
  const port = await freePort();
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  const child = spawn(process.execPath, [join(root, "dist/src/server.js")], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: dir,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_PATH: join(dir, "agent.db"),
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      WORKSPACE_ROOT: workspaces,
      INSTANCE_ID: name,
      // list_files needs no shell; the sandbox's probe at start is left out of the figures.
      SHELL_SANDBOX: "off",
      OPENAI_BASE_URL: upstreamUrl,
      OPENAI_API_KEY: "bench-not-a-secret",
      OPENAI_MODEL: "fake-model",
      LOG_LEVEL: "warn",
      MAX_CONCURRENT_RUNS: "1000",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  children.add(child);
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 20_000; ; ) {
    if (child.exitCode !== null) throw new Error(`${name} exited before it was healthy`);
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) throw new Error(`${name} did not become healthy`);
    await sleep(100);
  }
  return {
    child,
    port,
    async stop() {
      child.kill("SIGTERM");
      if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
      children.delete(child);
    },
  };
}

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

/** One measurement with bench/mini-load.mjs; resolves with its JSON result. */
function load(url, label) {
  const json = join(tmp, `${label.replace(/\W+/g, "-")}.json`);
  const args = ["--adapter", "ours", "--url", url, "--n", String(N), "--c", String(C), "--warmup", String(WARMUP)];
  const child = spawn(
    process.execPath,
    [join(root, "bench/mini-load.mjs"), ...args, "--label", label, "--json", json],
    {
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  children.add(child);
  return new Promise((resolve) =>
    child.once("exit", () => {
      children.delete(child);
      try {
        resolve(JSON.parse(readFileSync(json, "utf8")));
      } catch {
        resolve(null);
      }
    }),
  );
}

async function measure(scenario, pg, upstreamUrl, round) {
  const label = `${scenario.name} #${round}`;
  const workspaces = join(tmp, `ws-${scenario.name}-${round}`);
  let databaseUrl = null;
  if (scenario.pg) {
    const db = `bench_${scenario.name.replace(/\W+/g, "_")}_${round}`;
    pg.createDb(db);
    databaseUrl = pg.url(db);
  }
  const instances = [];
  for (let i = 0; i < scenario.instances; i++) {
    instances.push(await startInstance(`${scenario.name}-${round}-${i}`, { databaseUrl, workspaces, upstreamUrl }));
  }
  const balancer = instances.length > 1 ? await startBalancer(instances.map((s) => s.port)) : null;
  const url = `http://127.0.0.1:${balancer ? balancer.port : instances[0].port}`;
  const serverCpu0 = instances.reduce((sum, s) => sum + cpuMsOf(s.child.pid), 0);
  const pgCpu0 = scenario.pg ? pgCpuMs(pg.postmaster) : 0;
  const result = await load(url, label);
  const serverCpu = instances.reduce((sum, s) => sum + cpuMsOf(s.child.pid), 0) - serverCpu0;
  const pgCpu = scenario.pg ? pgCpuMs(pg.postmaster) - pgCpu0 : 0;
  await balancer?.close();
  for (const s of instances) await s.stop();
  if (!result || result.ok !== result.completed) throw new Error(`${label}: runs failed (${JSON.stringify(result)})`);
  const runs = result.completed + (result.warmup ?? 0);
  return {
    runsPerS: result.runsPerS,
    p50: result.totalMs.p50,
    p99: result.totalMs.p99,
    serverCpuMsPerRun: serverCpu / runs,
    pgCpuMsPerRun: pgCpu / runs,
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);

console.log(
  `bench:cluster: C=${C}, n=${N} (+${WARMUP} warm-up) per measurement, ${ROUNDS} rounds; ${os.cpus().length} cores, node ${process.version}, load ${os.loadavg().map(f2).join(" ")}`,
);
const pg = startPostgres();
const upstream = await spawnWithPort(join(root, "bench/fake-upstream.mjs"), {
  PORT: "0",
  HOST: "127.0.0.1",
  FAKE_TOOL_NAME: "list_files",
  FAKE_TOOL_ARGS: "{}",
});
const upstreamUrl = `http://127.0.0.1:${upstream.port}/v1`;
const scenarios = [
  { name: "sqlite", pg: false, instances: 1 },
  { name: "pg-1", pg: true, instances: 1 },
  { name: "pg-3", pg: true, instances: 3 },
];
const results = Object.fromEntries(scenarios.map((s) => [s.name, []]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const scenario of scenarios) {
    const r = await measure(scenario, pg, upstreamUrl, round);
    results[scenario.name].push(r);
    console.log(
      `  ${scenario.name.padEnd(7)} round ${round}: ${f1(r.runsPerS)} runs/s, p50 ${f1(r.p50)} ms, p99 ${f1(r.p99)} ms, server CPU ${f2(r.serverCpuMsPerRun)} ms/run, PostgreSQL CPU ${f2(r.pgCpuMsPerRun)} ms/run`,
    );
  }
}
console.log("");
const summary = {};
for (const { name } of scenarios) {
  const rs = results[name];
  summary[name] = {
    runsPerS: median(rs.map((r) => r.runsPerS)),
    p50: median(rs.map((r) => r.p50)),
    p99: median(rs.map((r) => r.p99)),
    server: median(rs.map((r) => r.serverCpuMsPerRun)),
    pg: median(rs.map((r) => r.pgCpuMsPerRun)),
  };
  const s = summary[name];
  console.log(
    `  median ${name.padEnd(7)}: ${f1(s.runsPerS)} runs/s, p50 ${f1(s.p50)} ms, p99 ${f1(s.p99)} ms, CPU/run server ${f2(s.server)} ms + PostgreSQL ${f2(s.pg)} ms`,
  );
}
const ratio = summary["pg-1"].server / summary.sqlite.server;
console.log(
  `bench:cluster summary: sqlite ${f1(summary.sqlite.runsPerS)} runs/s ${f2(summary.sqlite.server)} ms CPU/run; pg x1 ${f1(summary["pg-1"].runsPerS)} runs/s ${f2(summary["pg-1"].server)} ms (+${f2(summary["pg-1"].pg)} ms PostgreSQL) = ${f2(ratio)}x SQLite's server CPU (aim <= 2x); pg x3 ${f1(summary["pg-3"].runsPerS)} runs/s ${f2(summary["pg-3"].server)} ms (+${f2(summary["pg-3"].pg)} ms PostgreSQL)`,
);
await sleep(10);
process.exit(0);
