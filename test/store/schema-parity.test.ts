import { readdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/database.js";
import { migrationFiles, migrationsDir } from "../../src/store/migrations.js";
import { runPgMigrations } from "../../src/store/pg/pg-migrations.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { tempDir } from "../helpers/temp-dir.js";

type Schema = Record<string, string[]>;

describe("migrations per dialect", () => {
  let database: TestPgDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    database = await createTestPgDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 4 });
    pool.on("error", () => {});
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it("SQLite and PostgreSQL have the same migration versions and define the same tables and columns", async () => {
    const versions = (dialect: "sqlite" | "postgres") => migrationFiles(migrationsDir(dialect)).map((m) => m.file);
    expect(versions("postgres")).toEqual(versions("sqlite"));
    // A migration left at the top of migrations/ would be applied by neither dialect.
    const top = readdirSync(join(migrationsDir("sqlite"), "..")).filter((f) => f.endsWith(".sql"));
    expect(top, "migrations/*.sql belong in migrations/sqlite/ and migrations/postgres/").toEqual([]);

    const dir = tempDir("schema-");
    const db = openDatabase({ path: join(dir.path, "agent.db") });
    const sqlite: Schema = {};
    for (const { name } of db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as {
      name: string;
    }[]) {
      sqlite[name] = (db.prepare(`SELECT name FROM pragma_table_info(?)`).all(name) as { name: string }[])
        .map((c) => c.name)
        .sort();
    }
    db.close();
    dir.cleanup();

    const postgres: Schema = {};
    const { rows } = await pool.query<{ table_name: string; column_name: string }>(
      "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name",
    );
    for (const row of rows) postgres[row.table_name] = [...(postgres[row.table_name] ?? []), row.column_name];
    for (const columns of Object.values(postgres)) columns.sort();

    expect(Object.keys(postgres).sort()).toEqual(Object.keys(sqlite).sort());
    expect(postgres).toEqual(sqlite);
    expect(Object.keys(sqlite)).toContain("runs");
  });

  it("instances migrating one database at once apply each migration exactly once", async () => {
    const fresh = await createTestPgDatabase();
    // An empty database: the template's migrations dropped with its tables.
    const reset = new pg.Pool({ connectionString: fresh.url, max: 1 });
    await reset.query("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    await reset.end();
    const pools = Array.from({ length: 3 }, () => {
      const each = new pg.Pool({ connectionString: fresh.url, max: 2 });
      // A connection still closing when the database is dropped (WITH FORCE) is terminated: expected.
      each.on("error", () => {});
      return each;
    });
    try {
      const ran = await Promise.all(pools.map((p) => runPgMigrations(p)));
      expect(ran.flat().sort()).toEqual(migrationFiles(migrationsDir("postgres")).map((m) => m.file));
      const again = await runPgMigrations(pools[0] as pg.Pool);
      expect(again).toEqual([]);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
      await fresh.drop();
    }
  });
});
