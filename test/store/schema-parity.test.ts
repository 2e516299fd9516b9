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

/**
 * A partial index's predicate in one spelling for both dialects: PostgreSQL's deparsed form
 * (`(status <> ALL (ARRAY['a'::text, 'b'::text]))`) as SQLite's source (`status NOT IN ('a', 'b')`).
 */
function predicate(sql: string): string {
  let text = sql
    .replace(/::text/g, "")
    .replace(/\s+/g, " ")
    .trim();
  text = text
    .replace(/<> ALL \(ARRAY\[([^\]]*)\]\)/g, "NOT IN ($1)")
    .replace(/= ANY \(ARRAY\[([^\]]*)\]\)/g, "IN ($1)");
  while (/^\(.*\)$/.test(text) && balanced(text.slice(1, -1))) text = text.slice(1, -1).trim();
  return text;
}

/** Whether every parenthesis of `text` is closed within it. */
function balanced(text: string): boolean {
  let depth = 0;
  for (const c of text) {
    depth += c === "(" ? 1 : c === ")" ? -1 : 0;
    if (depth < 0) return false;
  }
  return depth === 0;
}

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

  // A foreign key's child columns are searched for every parent row deleted or re-keyed (a
  // session's delete cascades through its runs): without an index leading with them each
  // such row costs a scan of the whole child table (on SQLite, on the event loop).
  it("every foreign key's child column leads an index, in both dialects", async () => {
    const dir = tempDir("fk-index-");
    const db = openDatabase({ path: join(dir.path, "agent.db") });
    const unindexedSqlite: string[] = [];
    const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as { name: string }[];
    for (const { name } of tables) {
      const pk = (
        db.prepare("SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk").all(name) as {
          name: string;
        }[]
      ).map((c) => c.name);
      const leading = new Set(pk.slice(0, 1));
      for (const index of db.prepare("SELECT name FROM pragma_index_list(?)").all(name) as { name: string }[]) {
        const first = db.prepare("SELECT name FROM pragma_index_info(?) ORDER BY seqno LIMIT 1").get(index.name) as
          | { name: string }
          | undefined;
        if (first) leading.add(first.name);
      }
      for (const fk of db
        .prepare('SELECT "from" AS col, "table" AS parent FROM pragma_foreign_key_list(?)')
        .all(name) as { col: string; parent: string }[]) {
        if (!leading.has(fk.col)) unindexedSqlite.push(`${name}.${fk.col} -> ${fk.parent}`);
      }
    }
    db.close();
    dir.cleanup();
    expect(tables.length).toBeGreaterThan(5);
    expect(unindexedSqlite).toEqual([]);

    // PostgreSQL: each single-column foreign key's column is the first key of some index.
    const { rows } = await pool.query<{ fk: string }>(`
      SELECT c.conrelid::regclass || '.' || a.attname AS fk
        FROM pg_constraint c
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
       WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
         AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid AND i.indkey[0] = c.conkey[1])`);
    const { rows: all } = await pool.query(
      "SELECT 1 FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace",
    );
    expect(all.length).toBeGreaterThan(5);
    expect(rows.map((r) => r.fk)).toEqual([]);
  });

  // The stores' queries are written for their indexes (a keyed steer's lookup by user message
  // id, a run's messages in seq order): an index one dialect lacks is a scan there. Compared by
  // what they index, not their names: a key's index is named by each dialect its own way.
  it("SQLite and PostgreSQL index the same columns, in the same order, unique and partial alike (the same predicate)", async () => {
    const dir = tempDir("index-parity-");
    const db = openDatabase({ path: join(dir.path, "agent.db") });
    const sqlite: string[] = [];
    for (const { name: table } of db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'schema_migrations'")
      .all() as { name: string }[]) {
      const indexes = db.prepare('SELECT name, "unique", partial, origin FROM pragma_index_list(?)').all(table) as {
        name: string;
        unique: number;
        partial: number;
        origin: string;
      }[];
      // An INTEGER PRIMARY KEY is the rowid, the table's own b-tree key: PostgreSQL's is an index.
      const pk = db.prepare("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk").all(table) as {
        name: string;
      }[];
      if (pk.length > 0 && !indexes.some((i) => i.origin === "pk"))
        sqlite.push(`${table} (${pk.map((c) => c.name).join(", ")}) unique`);
      for (const index of indexes) {
        const columns = (
          db.prepare("SELECT name FROM pragma_index_info(?) ORDER BY seqno").all(index.name) as { name: string }[]
        ).map((c) => c.name);
        const source = db.prepare("SELECT sql FROM sqlite_schema WHERE name = ?").pluck().get(index.name) as string;
        const where = index.partial ? ` WHERE ${predicate(source.replace(/^.*? WHERE /s, "").replace(/;$/, ""))}` : "";
        sqlite.push(`${table} (${columns.join(", ")})${index.unique ? " unique" : ""}${where}`);
      }
    }
    db.close();
    dir.cleanup();

    const { rows } = await pool.query<{ index: string; pred: string | null }>(`
      SELECT t.relname || ' (' ||
             (SELECT string_agg(a.attname, ', ' ORDER BY k.n)
                FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
                JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum) || ')' ||
             CASE WHEN x.indisunique THEN ' unique' ELSE '' END AS index,
             pg_get_expr(x.indpred, x.indrelid) AS pred
        FROM pg_index x
        JOIN pg_class t ON t.oid = x.indrelid
       WHERE t.relnamespace = 'public'::regnamespace AND t.relname <> 'schema_migrations'`);
    const postgres = rows.map((r) => (r.pred === null ? r.index : `${r.index} WHERE ${predicate(r.pred)}`));
    expect(sqlite.length).toBeGreaterThan(15);
    expect(sqlite).toContain("messages (id) WHERE role = 'user'");
    expect(sqlite).toContain("runs (session_id) unique WHERE status NOT IN ('finished', 'queued')");
    expect(postgres.sort()).toEqual(sqlite.sort());
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
