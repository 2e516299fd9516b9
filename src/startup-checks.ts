import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "./config.js";
import { type Db, openDatabase } from "./store/database.js";

/**
 * Creates WORKSPACE_ROOT when missing and checks that it is a directory this process can
 * write; throws ConfigError naming the variable otherwise, so a server that could not
 * create a single session does not start.
 */
export function prepareWorkspaceRoot(root: string): void {
  const path = resolve(root);
  try {
    mkdirSync(path, { recursive: true });
    if (!statSync(path).isDirectory()) throw new Error("it is not a directory");
    accessSync(path, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw new ConfigError([`WORKSPACE_ROOT: ${path} cannot hold workspaces: ${reason(err)}`]);
  }
}

/** Opens the database, or throws ConfigError naming DATABASE_PATH and why it cannot be used. */
export function openDatabaseOrExplain(path: string): Db {
  try {
    return openDatabase({ path });
  } catch (err) {
    throw new ConfigError([`DATABASE_PATH: cannot use ${resolve(path)}: ${reason(err)}`]);
  }
}

/** What a failed listen means for the operator, naming PORT or HOST; null when it is neither. */
export function listenProblem(err: unknown, { host, port }: { host: string; port: number }): string | null {
  const code = (err as { code?: unknown }).code;
  if (code === "EADDRINUSE") return `PORT: ${port} is already in use on ${host}`;
  if (code === "EACCES") return `PORT: this process may not listen on port ${port} (below 1024 needs privileges)`;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EADDRNOTAVAIL" || code === "EAI_NONAME") {
    return `HOST: cannot listen on ${JSON.stringify(host)} (${code}): use an address of this machine, e.g. 127.0.0.1 or 0.0.0.0`;
  }
  return null;
}

const reason = (err: unknown): string => (err instanceof Error ? err.message : String(err));
