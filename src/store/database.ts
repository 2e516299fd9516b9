import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { StorageError } from "./errors.js";
import { refuseHardLinks } from "./hard-links.js";
import { runMigrations } from "./migrations.js";
import { ownerLockPath } from "./owner-lock-path.js";
import { translateSqliteError } from "./sqlite-errors.js";

export type Db = Database.Database;

export interface OpenDatabaseOptions {
  path: string;
  /** Milliseconds a writer waits for a lock held by another connection. */
  busyTimeoutMs?: number;
}

/**
 * Holds the lock that makes one server process the owner of the database file: a write
 * transaction on the sidecar file `<file>-lock` beside the file `path` resolves to (see
 * ownerLockPath: one lock whatever name reaches the file), taken at open and held until close
 * (the operating system drops it with the process). The database itself is opened in SQLite's
 * normal locking mode, so that the checkpoint worker (see Checkpointer) can have a
 * connection of its own; every other process fails here.
 */
function takeOwnerLock(path: string): Database.Database {
  const lock = new Database(ownerLockPath(path), { timeout: 0 });
  try {
    lock.pragma("locking_mode = EXCLUSIVE");
    lock.exec("BEGIN EXCLUSIVE");
  } catch (err) {
    lock.close();
    if ((err as { code?: string }).code === "SQLITE_BUSY") {
      throw new StorageError(
        "busy",
        `the database ${path} is in use by another process (is another server running on it?)`,
      );
    }
    throw translateSqliteError(err);
  }
  return lock;
}

/**
 * Opens (creating if needed) the SQLite file with WAL, foreign keys and a busy timeout, owned
 * by this process (see takeOwnerLock; released when the returned connection is closed), and
 * applies pending migrations before returning. Throws StorageError when the file cannot be
 * used (kind `busy`, naming the file, when another process holds it; `unavailable` when the
 * file has another name, a hard link: see refuseHardLinks); a migration that does not apply,
 * or a schema a newer release migrated (SchemaTooNewError), is thrown as it is, the file
 * closed.
 */
export function openDatabase({ path, busyTimeoutMs = 5000 }: OpenDatabaseOptions): Db {
  const onDisk = path !== ":memory:";
  if (onDisk) mkdirSync(dirname(path), { recursive: true });
  let lock: Database.Database | null = null;
  let db: Database.Database;
  try {
    // One server process owns the file: a second server on the same DATABASE_PATH fails at
    // start instead of resuming runs this one is executing. The lock is named after the path,
    // so a file with a second name (a hard link) is refused first: nothing is created for it.
    if (onDisk) {
      refuseHardLinks(path);
      lock = takeOwnerLock(path);
    }
    db = new Database(path, { timeout: busyTimeoutMs });
  } catch (err) {
    lock?.close();
    throw err instanceof StorageError ? err : translateSqliteError(err);
  }
  const close = db.close.bind(db);
  db.close = () => {
    close();
    lock?.close();
    return db;
  };
  try {
    // A link made between the check above and the open: refused before anything is read or
    // written (its lock file stays). One made later is the next start's (see refuseHardLinks).
    if (onDisk) refuseHardLinks(path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    // Commits write their pages to the WAL without fsync (synchronous=NORMAL: a crash of the
    // process loses nothing, a power loss at most the last commits). Checkpoints are what
    // fsync; fewer, larger ones write each hot page once instead of once per 1000 pages.
    // (A store opened on a file checkpoints on a worker instead: see openSqliteStore.)
    db.pragma("wal_autocheckpoint = 10000");
    // 8 MiB of page cache holds the live runs' pages (the recent end of each table); older
    // pages come from the OS's file cache. A larger cache only grows the RSS for longer.
    db.pragma("cache_size = -8192");
    db.pragma("temp_store = MEMORY");
    db.exec("BEGIN IMMEDIATE; COMMIT");
  } catch (err) {
    db.close();
    throw err instanceof StorageError ? err : translateSqliteError(err);
  }
  try {
    runMigrations(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}
