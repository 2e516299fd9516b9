import pg from "pg";
import { migrationFiles, migrationsDir } from "../migrations.js";
import { refuseNewerSchema } from "../schema-too-new.js";

/** The advisory lock key every instance takes to migrate ("agent-server migrations"). */
const MIGRATION_LOCK = 4_417_302_011;

/**
 * Applies the PostgreSQL migrations not yet applied, in order, each in its own transaction with
 * its row in `schema_migrations`, while holding `pg_advisory_lock`: instances starting together
 * wait for each other and the later ones find nothing left to do. Returns the files applied.
 * They run on a client of their own, opened with the pool's settings but without its query
 * timeout: a migration may rewrite a large table, and waits for another instance's.
 * A database a newer release migrated is refused with SchemaTooNewError, nothing applied.
 */
export async function runPgMigrations(pool: pg.Pool, dir = migrationsDir("postgres")): Promise<string[]> {
  const client = new pg.Client({ ...pool.options, query_timeout: undefined });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
      );
      const rows = (
        await client.query<{ version: number; name: string }>("SELECT version, name FROM schema_migrations")
      ).rows;
      const files = migrationFiles(dir);
      refuseNewerSchema(rows, files);
      const applied = new Set(rows.map((r) => r.version));
      const ran: string[] = [];
      for (const { version, file, sql } of files) {
        if (applied.has(version)) continue;
        await client.query("BEGIN");
        try {
          await client.query(sql);
          await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
            version,
            file,
            new Date().toISOString(),
          ]);
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK").catch(() => {});
          throw err;
        }
        ran.push(file);
      }
      return ran;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
  }
}
