// What the benchmarks over PostgreSQL share: a throwaway cluster in the harness's temp dir,
// PostgreSQL's own CPU, and instances of our server over one of its databases.
//
// The cluster: Debian's PostgreSQL 15 (PG_BIN, default /usr/lib/postgresql/15/bin; as root it
// runs as the `postgres` user), on a Unix socket only, fsync on, synchronous_commit off (like
// SQLite's WAL with synchronous=NORMAL: a crash of the database's host may lose the last
// commits, never corrupts). It is stopped when the harness cleans up, before its directory
// is removed.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cpuMsOf, root } from "./harness.mjs";

const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

/**
 * Starts the cluster under `h.tmp`; returns { postmaster, url(db), createDb(name), cpuMs() },
 * cpuMs() being PostgreSQL's whole CPU so far (ms): the postmaster, every live process it
 * started (backends, writers, autovacuum) and the ones that ended (reaped into the
 * postmaster's children times), so the difference of two readings is what it used between.
 */
export function startPostgres(h, { maxConnections = 200 } = {}) {
  const dir = join(h.tmp, "pg");
  mkdirSync(dir);
  const asRoot = process.getuid?.() === 0;
  const run = (bin, args) =>
    execFileSync(
      asRoot ? "runuser" : join(PG_BIN, bin),
      asRoot ? ["-u", "postgres", "--", join(PG_BIN, bin), ...args] : args,
      { stdio: ["ignore", "ignore", "pipe"] },
    );
  if (asRoot) {
    const id = (flag) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    // The cluster's user reaches its directory (and nothing else here).
    chmodSync(h.tmp, 0o711);
    chownSync(dir, id("-u"), id("-g"));
  }
  const data = join(dir, "data");
  const user = asRoot ? "postgres" : (process.env.USER ?? "postgres");
  run("initdb", ["-D", data, "-U", user, "-A", "trust", "-E", "UTF8", "--locale", "C"]);
  const options = `-c listen_addresses='' -c unix_socket_directories=${dir} -c synchronous_commit=off -c max_connections=${maxConnections}`;
  run("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options, "-w", "start"]);
  h.atCleanup(() => run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]));
  const postmaster = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
  const url = (db) => `postgres://${user}@localhost/${db}?host=${dir}`;
  const createDb = (name) => run("psql", ["-h", dir, "-U", user, "-d", "postgres", "-qc", `CREATE DATABASE ${name}`]);
  return { postmaster, url, createDb, cpuMs: () => clusterCpuMs(postmaster) };
}

function clusterCpuMs(postmaster) {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === postmaster) total += cpuMsOf(Number(entry)) ?? 0;
    } catch {
      // gone meanwhile
    }
  }
  return total + (cpuMsOf(postmaster, { reapedChildren: true }) ?? 0);
}

/**
 * `count` instances of our server (dist/src/server.js) over a new database `db` of `pg`,
 * started one after the other, sharing one workspace root (as instances over one database
 * must); each is named `${label}-${i}` (its INSTANCE_ID). Resolves with their startServer results.
 */
export async function startInstancesOverPg({ h, pg, db, label, count, upstreamUrl, env = {}, nodeArgs = [] }) {
  pg.createDb(db);
  const servers = [];
  for (let i = 0; i < count; i++) {
    const name = `${label}-${i}`;
    servers.push(
      await h.startServer({
        entry: join(root, "dist/src/server.js"),
        label: name,
        upstreamUrl,
        env: { WORKSPACE_ROOT: join(h.tmp, `ws-${label}`), ...env, DATABASE_URL: pg.url(db), INSTANCE_ID: name },
        nodeArgs,
      }),
    );
  }
  return servers;
}
