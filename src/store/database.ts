import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { runMigrations } from "./migrations.js";

export type Db = Database.Database;

export interface OpenDatabaseOptions {
  path: string;
  /** Milliseconds a writer waits for a lock held by another connection. */
  busyTimeoutMs?: number;
}

/**
 * Opens (creating if needed) the SQLite file with WAL, foreign keys and a busy
 * timeout, and applies pending migrations before returning.
 */
export function openDatabase({ path, busyTimeoutMs = 5000 }: OpenDatabaseOptions): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  runMigrations(db);
  return db;
}
