/**
 * A database a newer release migrated (schema_migrations holds a version above every migration
 * this release ships), started by this release: refused, exit 2, naming both versions and the
 * way back (the newer release or the backup), on SQLite and PostgreSQL, with nothing applied.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { migrationFiles, migrationsDir, runMigrations } from "../../src/store/migrations.js";
import { startRefused } from "../helpers/child-server.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const known = Math.max(...migrationFiles(migrationsDir("sqlite")).map((m) => m.version));
const future = { version: known + 1, name: `${String(known + 1).padStart(4, "0")}_from_the_future.sql` };
const refusal = (variable: string) =>
  new RegExp(
    `${variable}: cannot use .*: the database was migrated by a newer release: its schema is at version ${future.version} \\(${future.name}\\), and this release knows versions up to ${known}; run the newer release, or restore the backup taken before the upgrade`,
  );
const INSERT = "INSERT INTO schema_migrations (version, name, applied_at) VALUES";

describe("a database migrated by a newer release", () => {
  it("SQLite: refused before any migration of this release is applied", () => {
    const dir = tempDir("newer-schema-");
    cleanups.push(dir.cleanup);
    const only = join(dir.path, "first-two");
    mkdirSync(only);
    for (const m of migrationFiles(migrationsDir("sqlite")).slice(0, 2))
      copyFileSync(join(migrationsDir("sqlite"), m.file), join(only, m.file));
    const db = new Database(join(dir.path, "agent.db"));
    cleanups.push(() => db.close());
    runMigrations(db, only);
    db.prepare(`${INSERT} (?, ?, '2027-01-01')`).run(future.version, future.name);
    expect(() => runMigrations(db)).toThrow(/migrated by a newer release/);
    const versions = db.prepare("SELECT version FROM schema_migrations ORDER BY version").pluck().all();
    expect(versions).toEqual([1, 2, future.version]);
  });

  it("SQLite: the server refuses to start, exit 2, naming DATABASE_PATH and both versions", () => {
    const dir = tempDir("newer-schema-start-");
    cleanups.push(dir.cleanup);
    const path = join(dir.path, "agent.db");
    const db = new Database(path);
    runMigrations(db);
    db.prepare(`${INSERT} (?, ?, '2027-01-01')`).run(future.version, future.name);
    db.close();
    const refused = startRefused(dir.path, { DATABASE_PATH: path });
    expect(refused.output).toMatch(refusal("DATABASE_PATH"));
    expect(refused.output).not.toMatch(/\n\s+at /);
    expect(refused.status).toBe(2);
  });

  it("PostgreSQL: the server refuses to start, exit 2, naming DATABASE_URL and both versions", async () => {
    const dir = tempDir("newer-schema-pg-");
    cleanups.push(dir.cleanup);
    const database = await createTestPgDatabase();
    cleanups.push(database.drop);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query(`${INSERT} ($1, $2, '2027-01-01')`, [future.version, future.name]);
    } finally {
      await client.end();
    }
    const refused = startRefused(dir.path, { DATABASE_URL: database.url });
    expect(refused.output).toMatch(refusal("DATABASE_URL"));
    expect(refused.output).not.toMatch(/\n\s+at /);
    expect(refused.status).toBe(2);
  });
});
