import { accessSync, chmodSync, constants, mkdirSync, realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "./config.js";
import { ambiguousUserInfo, displayDatabaseUrl } from "./display-database-url.js";
import { messageOf } from "./message-of.js";
import { StorageError } from "./store/errors.js";
import type { MigrationLockHolder } from "./store/pg/pg-migrations.js";
import type { OpenPgStoreOptions } from "./store/pg/pg-store.js";
import { SchemaTooNewError } from "./store/schema-too-new.js";
import { type OpenSqliteStoreOptions, openSqliteStore } from "./store/sqlite-store.js";
import type { Store } from "./store/store.js";
import { resolveShellSandbox, type ShellSandbox, type ShellSandboxMode } from "./tools/index.js";

/**
 * What stops `root` (WORKSPACE_ROOT) from holding workspaces, after creating it when missing;
 * null when it is a directory this process can write. The reason names no path (readiness
 * answers without credentials): an errno code or "not a directory".
 */
export function workspaceRootProblem(root: string): string | null {
  const path = resolve(root);
  try {
    mkdirSync(path, { recursive: true });
    if (!statSync(path).isDirectory()) return "it is not a directory";
    accessSync(path, constants.W_OK | constants.X_OK);
    return null;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return typeof code === "string" ? code : "it cannot be used";
  }
}

/**
 * Makes WORKSPACE_ROOT ready (see workspaceRootProblem) and returns its real path; throws
 * ConfigError naming the variable otherwise, so a server that could not create a single
 * session does not start.
 */
export function prepareWorkspaceRoot(root: string, { shared = false }: { shared?: boolean } = {}): string {
  const problem = workspaceRootProblem(root);
  if (problem) {
    throw new ConfigError([
      `WORKSPACE_ROOT: ${resolve(root)} cannot hold workspaces (${problem})${shared ? SHARED_ROOT_HINT : ""}`,
    ]);
  }
  return realpathSync(resolve(root));
}

/** What a start over a shared database says of WORKSPACE_ROOT when it cannot be used. */
const SHARED_ROOT_HINT =
  "; with DATABASE_URL set, runs move between instances, so WORKSPACE_ROOT must be one volume shared by every instance (a network file system mounted at the same path on each), writable by the server";

/**
 * Opens the store, or throws ConfigError naming DATABASE_PATH and why the file cannot be used
 * (a storage failure, a file system error: a path, permission, lock or format problem, or a
 * schema a newer release migrated).
 * Any other failure (a migration that does not apply, say) is thrown as it is.
 */
export function openStoreOrExplain(
  path: string,
  options: Pick<OpenSqliteStoreOptions, "onCheckpoint" | "onCheckpointError" | "onFileProblem" | "groupCommitMs"> = {},
): Store {
  try {
    return openSqliteStore({ path, ...options });
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const explained = err instanceof StorageError || err instanceof SchemaTooNewError;
    if (!explained && !(typeof code === "string" && /^E[A-Z]+$/.test(code))) throw err;
    throw new ConfigError([`DATABASE_PATH: cannot use ${resolve(path)}: ${messageOf(err)}`]);
  }
}

/**
 * Connects to the PostgreSQL database at `url` and migrates it, or throws ConfigError naming
 * DATABASE_URL (as displayDatabaseUrl shows it: no secret) and the server's reason (authentication
 * failed, database missing, connection refused, a schema a newer release migrated; for a URL whose
 * user info is ambiguous, how to write it instead: the driver's reason may quote the password).
 * Any other failure (a migration that does not apply) is thrown as it is.
 */
export async function openPgStoreOrExplain(
  url: string,
  {
    groupCommitMs,
    queryTimeoutMs,
    onMigrationLockWait,
  }: Pick<OpenPgStoreOptions, "groupCommitMs" | "queryTimeoutMs" | "onMigrationLockWait"> = {},
): Promise<Store> {
  try {
    // Loaded only for PostgreSQL: the driver and the store's modules are ~30 ms of a start.
    const { openPgStore } = await import("./store/pg/pg-store.js");
    return await openPgStore({ url, groupCommitMs, queryTimeoutMs, onMigrationLockWait });
  } catch (err) {
    const shown = displayDatabaseUrl(url);
    // The driver's own parser refused the URL (its message carries no part of it).
    if ((err as { code?: unknown }).code === "ERR_INVALID_URL") {
      throw new ConfigError([
        `DATABASE_URL: cannot use ${shown}: it is not a URL the PostgreSQL driver can parse (percent-encode @ : / ? # in the user name and password)`,
      ]);
    }
    if (!(err instanceof StorageError) && !(err instanceof SchemaTooNewError)) throw err;
    // The driver may have taken part of the password for the host, port or database its reason names.
    if (err instanceof StorageError && ambiguousUserInfo(url)) {
      throw new ConfigError([
        `DATABASE_URL: cannot use ${shown}: its user name and password cannot be told from its host and database (a / ? or # in the password may end the user info before its @); percent-encode @ : / ? # in the user name and password`,
      ]);
    }
    throw new ConfigError([`DATABASE_URL: cannot use ${shown}: ${messageOf(err)}`]);
  }
}

/**
 * What an operator reads while a start waits for PostgreSQL's migration lock: who holds it
 * and how to release it if that holder is stopped or hung (a start waits as long as it is held).
 */
export function migrationLockWaitMessage({
  holder,
  waitedMs,
}: {
  holder: MigrationLockHolder | null;
  waitedMs: number;
}): string {
  const waited = `waiting ${Math.round(waitedMs / 1000)} s for the PostgreSQL migration lock`;
  if (!holder) return `${waited}: its holder just released it`;
  const who = [
    holder.applicationName && `application ${holder.applicationName}`,
    holder.clientAddr && `client ${holder.clientAddr}`,
    holder.state && `${holder.state}${holder.since ? ` since ${holder.since}` : ""}`,
  ].filter(Boolean);
  return `${waited}, held by PostgreSQL backend ${holder.pid}${who.length ? ` (${who.join(", ")})` : ""}: another instance is migrating, or one that holds the lock is stopped or hung (then SELECT pg_terminate_backend(${holder.pid}) releases it)`;
}

/**
 * Makes the database file and its WAL/SHM companions readable by this user only (0600), for
 * files an earlier version created with the default mode; missing ones are skipped.
 */
export function makeDatabasePrivate(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(file, 0o600);
    } catch {
      // Absent, or owned by someone else: nothing this process can change.
    }
  }
}

const HOST_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EADDRNOTAVAIL", "EAI_NONAME", "EINVAL", "EAFNOSUPPORT"]);

/**
 * What a failed listen means for the operator, naming PORT (or `variable`) or HOST; null when it
 * is neither. HOST is named when it resolves to no address of this machine, or to one the kernel
 * will not bind (EINVAL: an IPv6 link-local address without its `%zone`; EAFNOSUPPORT: IPv6 on a
 * machine without it).
 */
export function listenProblem(
  err: unknown,
  { host, port, variable = "PORT" }: { host: string; port: number; variable?: string },
): string | null {
  const code = (err as { code?: unknown }).code;
  if (code === "EADDRINUSE") return `${variable}: ${port} is already in use on ${host}`;
  if (code === "EACCES")
    return `${variable}: this process may not listen on port ${port} (below 1024 needs privileges)`;
  if (typeof code === "string" && HOST_CODES.has(code)) {
    const hint = code === "EINVAL" ? " (an IPv6 link-local address needs its %zone, e.g. fe80::1%eth0)" : "";
    return `HOST: cannot listen on ${JSON.stringify(host)} (${code}): use an address of this machine${hint}, e.g. 127.0.0.1 or 0.0.0.0`;
  }
  return null;
}

/**
 * The shell tools' sandbox (see resolveShellSandbox), tried with `directory` (WORKSPACE_ROOT's
 * real path) as its workspace; throws ConfigError naming SHELL_SANDBOX when `bwrap` is
 * required and cannot work.
 */
export function prepareShellSandbox({
  mode,
  network,
  tmpBytes,
  maxProcesses,
  directory,
}: {
  mode: ShellSandboxMode;
  network: boolean;
  tmpBytes: number;
  maxProcesses: number;
  directory: string;
}): ShellSandbox {
  const resolved = resolveShellSandbox({ mode, network, tmpBytes, maxProcesses, directory });
  if (!resolved.ok) {
    throw new ConfigError([
      `SHELL_SANDBOX: bwrap is required, but ${resolved.problem}; see the README on what the sandbox needs, or set SHELL_SANDBOX=auto or off`,
    ]);
  }
  return resolved.sandbox;
}
