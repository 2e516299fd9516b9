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
  // Commits write their pages to the WAL without fsync (synchronous=NORMAL: a crash of the
  // process loses nothing, a power loss at most the last commits). Checkpoints are what
  // fsync; fewer, larger ones write each hot page once instead of once per 1000 pages.
  db.pragma("wal_autocheckpoint = 10000");
  db.pragma("cache_size = -65536");
  db.pragma("temp_store = MEMORY");
  runMigrations(db);
  return db;
}
