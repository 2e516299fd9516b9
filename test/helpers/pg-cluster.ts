import { execFileSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where the machine's PostgreSQL 15 lives (Debian's postgresql package; `.ci/run` installs it). */
export const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

export interface PgCluster {
  /** A superuser URL to the cluster's `postgres` database, over its Unix socket. */
  url: string;
  stop(): void;
}

/**
 * Starts a throwaway PostgreSQL cluster in a temp dir: a Unix socket only (no TCP port), no
 * fsync, trust authentication for the local superuser. initdb refuses root, so as root the
 * cluster runs as the `postgres` user, the temp dir given to it.
 */
export function startPgCluster(): PgCluster {
  const dir = mkdtempSync(join(tmpdir(), "agent-pg-"));
  const asRoot = process.getuid?.() === 0;
  const run = (bin: string, args: string[]) =>
    execFileSync(
      asRoot ? "runuser" : join(PG_BIN, bin),
      asRoot ? ["-u", "postgres", "--", join(PG_BIN, bin), ...args] : args,
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  const user = asRoot ? "postgres" : (process.env.USER ?? "postgres");
  run("initdb", ["-D", data, "-U", user, "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C"]);
  const options = [
    "-c listen_addresses=''",
    `-c unix_socket_directories=${dir}`,
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=200",
  ].join(" ");
  run("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options, "-w", "start"]);
  return {
    url: `postgres://${user}@localhost/postgres?host=${dir}`,
    stop() {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** The same server's URL to another database. */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl.replace(/^postgres(ql)?:/, "http:"));
  url.pathname = `/${database}`;
  return url.toString().replace(/^http:/, "postgres:");
}
