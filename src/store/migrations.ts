import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type Database from "better-sqlite3";
import { refuseNewerSchema } from "./schema-too-new.js";

/** The SQL dialects with their own migrations; one version number means the same change in each. */
export type Dialect = "sqlite" | "postgres";

/** The dialect's folder under the project's `migrations/`, from `src/store/` or from `dist/src/store/`. */
export function migrationsDir(dialect: Dialect = "sqlite"): string {
  for (const up of ["../../migrations", "../../../migrations"]) {
    const dir = fileURLToPath(new URL(`${up}/${dialect}`, import.meta.url));
    if (existsSync(dir)) return dir;
  }
  throw new Error(`migrations folder for ${dialect} not found`);
}

export interface MigrationFile {
  version: number;
  file: string;
  sql: string;
}

/** The forward-only `NNNN_name.sql` files of a folder, in version order. */
export function migrationFiles(dir: string): MigrationFile[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 4)), file, sql: readFileSync(join(dir, file), "utf8") }));
}

/** A migration whose first line is this runs with foreign keys off (a table rebuild), checked before it commits. */
const FOREIGN_KEYS_OFF = "-- foreign-keys: off";

/**
 * Applies the SQLite migrations not yet applied, in order, each in its own transaction
 * together with its row in `schema_migrations`. Re-running is a no-op. A database a newer
 * release migrated (a version above the folder's highest) is refused with SchemaTooNewError,
 * nothing applied.
 */
export function runMigrations(db: Database.Database, dir = migrationsDir("sqlite")): string[] {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  const rows = db.prepare("SELECT version, name FROM schema_migrations").all() as { version: number; name: string }[];
  const files = migrationFiles(dir);
  refuseNewerSchema(rows, files);
  const applied = new Set(rows.map((r) => r.version));
  const ran: string[] = [];
  for (const { version, file, sql } of files) {
    if (applied.has(version)) continue;
    // The pragma is a no-op inside a transaction, so it is set around it.
    const keysOff = sql.startsWith(FOREIGN_KEYS_OFF) && db.pragma("foreign_keys", { simple: true }) === 1;
    if (keysOff) db.pragma("foreign_keys = OFF");
    try {
      db.transaction(() => {
        db.exec(sql);
        const broken = keysOff ? (db.pragma("foreign_key_check") as unknown[]) : [];
        if (broken.length) throw new Error(`migration ${file} breaks ${broken.length} foreign key references`);
        db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
          version,
          file,
          new Date().toISOString(),
        );
      })();
    } finally {
      if (keysOff) db.pragma("foreign_keys = ON");
    }
    if (keysOff) giveBackFreedPages(db);
    ran.push(file);
  }
  return ran;
}

/** The share of a file's pages a rebuild must leave free for the file to be rewritten (VACUUM). */
const VACUUM_FREE_SHARE = 0.25;

/**
 * A rebuild leaves the old table's pages free. When they are a large part of the file (the
 * rebuilt table was), the file is rewritten without them (VACUUM, outside any transaction);
 * else they stay on the free list, where later writes take them: a rewrite of a whole large
 * database (its events) at a start, to give back a small table's pages, would keep the server
 * from listening for as long and need the file's size again on disk.
 */
function giveBackFreedPages(db: Database.Database): void {
  const free = db.pragma("freelist_count", { simple: true }) as number;
  const pages = db.pragma("page_count", { simple: true }) as number;
  if (free > 0 && free >= pages * VACUUM_FREE_SHARE) db.exec("VACUUM");
}
