/**
 * A PostgreSQL migration marked `-- migrate: no transaction` runs statement by statement, outside
 * a transaction (what CREATE INDEX CONCURRENTLY needs): its version is recorded only once every
 * statement succeeded, a file that failed is run again whole at the next start, and an index a
 * failed concurrent build left INVALID is dropped and built again rather than taken for built.
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { migrationFiles, migrationsDir } from "../../src/store/migrations.js";
import { runsOutsideTransaction, sqlStatements } from "../../src/store/pg/pg-migration-outside-transaction.js";
import { runPgMigrations } from "../../src/store/pg/pg-migrations.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("a migration's statements", () => {
  it("are split at semicolons outside quotes, comments left out", () => {
    const sql = `-- migrate: no transaction
-- a comment; with a semicolon
CREATE INDEX CONCURRENTLY IF NOT EXISTS a ON t (x) WHERE y = 'a;b''c'; /* block; comment */
DROP INDEX CONCURRENTLY IF EXISTS "odd;name";
`;
    expect(sqlStatements(sql)).toEqual([
      "CREATE INDEX CONCURRENTLY IF NOT EXISTS a ON t (x) WHERE y = 'a;b''c'",
      'DROP INDEX CONCURRENTLY IF EXISTS "odd;name"',
    ]);
    expect(runsOutsideTransaction(sql)).toBe(true);
    expect(runsOutsideTransaction(`-- a comment\n${sql}`)).toBe(false);
  });

  // Such a file is run again whole after a failure part way: each statement must find its own
  // work done (or half done) and go on.
  it("of every PostgreSQL migration run outside a transaction are re-runnable index builds and drops", () => {
    const dir = migrationsDir("postgres");
    const outside = migrationFiles(dir).filter((m) => runsOutsideTransaction(m.sql));
    expect(outside.map((m) => m.version)).toEqual(expect.arrayContaining([13, 18, 20, 21, 24]));
    const rerunnable =
      /^(CREATE\s+(UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS|DROP\s+INDEX\s+CONCURRENTLY\s+IF\s+EXISTS)\s/i;
    const others = outside.flatMap((m) => sqlStatements(m.sql).filter((s) => !rerunnable.test(s)));
    expect(others).toEqual([]);
    // CONCURRENTLY cannot run in a transaction: a file using it without the marker would fail.
    const unmarked = migrationFiles(dir).filter(
      (m) => !runsOutsideTransaction(m.sql) && sqlStatements(m.sql).some((s) => /\bCONCURRENTLY\b/i.test(s)),
    );
    expect(unmarked.map((m) => m.file)).toEqual([]);
  });
});

it("a failed concurrent build records no version and leaves no invalid index; the next start builds it", async () => {
  const database = await createTestPgDatabase();
  cleanups.push(() => database.drop());
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on("error", () => {});
  cleanups.push(() => pool.end());

  const at = "2026-01-01T00:00:00.000Z";
  const stats = '{"modelCalls":0,"toolCalls":0,"turns":0,"inputTokens":0,"outputTokens":0,"durationMs":0}';
  await pool.query(`INSERT INTO sessions (id, owner, workspace, created_at) VALUES ('ses_1', '', 'w1', '${at}')`);
  await pool.query(
    `INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at)
     VALUES ('run_1', 'ses_1', 'running', 'hi', 5, '${stats}', '${at}')`,
  );
  for (const seq of [1, 2]) {
    await pool.query(`INSERT INTO run_events (run_id, seq, type, data) VALUES ('run_1', ${seq}, 'plan.updated', '{}')`);
  }

  // This release's migrations and one more, whose unique build fails while run_1 has two plans.
  const dir = tempDir("pg-outside-");
  cleanups.push(() => dir.cleanup());
  const files = join(dir.path, "migrations");
  mkdirSync(files);
  for (const m of migrationFiles(migrationsDir("postgres"))) {
    copyFileSync(join(migrationsDir("postgres"), m.file), join(files, m.file));
  }
  const last = Math.max(...migrationFiles(files).map((m) => m.version));
  const file = `${String(last + 1).padStart(4, "0")}_one_plan_per_run.sql`;
  const uniquePlans = "ON run_events (run_id) WHERE type = 'plan.updated'";
  writeFileSync(
    join(files, file),
    `-- migrate: no transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS test_sessions_created ON sessions (created_at);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS test_one_plan_per_run ${uniquePlans};
`,
  );
  const index = async (name: string) =>
    (
      await pool.query<{ valid: boolean; unique: boolean }>(
        "SELECT indisvalid AS valid, indisunique AS unique FROM pg_index WHERE indexrelid = to_regclass($1)",
        [name],
      )
    ).rows[0] ?? null;
  const recorded = async () =>
    (await pool.query("SELECT 1 FROM schema_migrations WHERE version = $1", [last + 1])).rowCount;

  await expect(runPgMigrations(pool, { dir: files })).rejects.toThrow(/could not create unique index/);
  expect({
    recorded: await recorded(),
    first: await index("test_sessions_created"),
    failed: await index("test_one_plan_per_run"),
  }).toEqual({ recorded: 0, first: { valid: true, unique: false }, failed: null });

  // A build that failed where nothing dropped its index (its connection lost): INVALID, left.
  await expect(pool.query(`CREATE UNIQUE INDEX CONCURRENTLY test_one_plan_per_run ${uniquePlans}`)).rejects.toThrow();
  expect(await index("test_one_plan_per_run")).toEqual({ valid: false, unique: true });

  await pool.query("DELETE FROM run_events WHERE run_id = 'run_1' AND seq = 2");
  expect(await runPgMigrations(pool, { dir: files })).toEqual([file]);
  expect({ recorded: await recorded(), built: await index("test_one_plan_per_run") }).toEqual({
    recorded: 1,
    built: { valid: true, unique: true },
  });
  expect(await runPgMigrations(pool, { dir: files })).toEqual([]);
}, 30_000);
