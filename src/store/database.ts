import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { StorageError } from "./errors.js";
import { runMigrations } from "./migrations.js";
import { translateSqliteError } from "./sqlite-errors.js";

export type Db = Database.Database;

export interface OpenDatabaseOptions {
  path: string;
  /** Milliseconds a writer waits for a lock held by another connection. */
  busyTimeoutMs?: number;
}

/**
 * Opens (creating if needed) the SQLite file with WAL, foreign keys, a busy timeout and
 * an exclusive lock held by this process, and applies pending migrations before returning.
 * Throws StorageError when the file cannot be used (kind `busy`, naming the file, when another
 * process holds it); a migration that does not apply is thrown as it is.
 */
export function openDatabase({ path, busyTimeoutMs = 5000 }: OpenDatabaseOptions): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  let db: Database.Database;
  try {
    db = new Database(path, { timeout: busyTimeoutMs });
  } catch (err) {
    throw translateSqliteError(err);
  }
  try {
    // One server process owns the file: the lock is taken now and held until close, so a
    // second server on the same DATABASE_PATH fails at start instead of resuming runs this
    // one is executing. (It also spares WAL its shared-memory index.)
    db.pragma("locking_mode = EXCLUSIVE");
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    // Commits write their pages to the WAL without fsync (synchronous=NORMAL: a crash of the
    // process loses nothing, a power loss at most the last commits). Checkpoints are what
    // fsync; fewer, larger ones write each hot page once instead of once per 1000 pages.
    db.pragma("wal_autocheckpoint = 10000");
    // 8 MiB of page cache holds the live runs' pages (the recent end of each table); older
    // pages come from the OS's file cache. A larger cache only grows the RSS for longer.
    db.pragma("cache_size = -8192");
    db.pragma("temp_store = MEMORY");
    db.exec("BEGIN IMMEDIATE; COMMIT");
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === "SQLITE_BUSY") {
      throw new StorageError(
        "busy",
        `the database ${path} is in use by another process (is another server running on it?)`,
      );
    }
    throw translateSqliteError(err);
  }
  runMigrations(db);
  return db;
}
