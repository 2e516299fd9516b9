import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { migrationFiles, migrationsDir, runMigrations } from "../../src/store/migrations.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir> | undefined;
afterEach(() => dir?.cleanup());

const at = "2026-01-01T00:00:00.000Z";
const stats = '{"modelCalls":0,"toolCalls":0,"turns":0,"inputTokens":0,"outputTokens":0,"durationMs":0}';

/** A database migrated up to (not including) `version`, with a finished run of a key's session. */
function databaseBefore(version: number): Database.Database {
  dir = tempDir();
  const only = join(dir.path, "migrations");
  mkdirSync(only);
  for (const m of migrationFiles(migrationsDir()).filter((f) => f.version < version)) {
    copyFileSync(join(migrationsDir(), m.file), join(only, m.file));
  }
  const db = new Database(join(dir.path, "agent.db"));
  db.pragma("foreign_keys = ON");
  runMigrations(db, only);
  db.exec(`
    INSERT INTO sessions (id, owner, workspace, created_at) VALUES ('ses_1', 'key_1', 'w1', '${at}');
    INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at)
      VALUES ('run_1', 'ses_1', 'finished', 'hi', 5, '${stats}', '${at}');
  `);
  return db;
}

const indexesOf = (db: Database.Database) =>
  db
    .prepare(
      "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'webhook_deliveries' ORDER BY name",
    )
    .all();

it("migration 0022 keeps every delivery and index, and a run's delete leaves its deliveries without it", () => {
  const db = databaseBefore(22);
  const insert = db.prepare(
    `INSERT INTO webhook_deliveries (id, run_id, event_seq, type, url, body, status, attempts, next_attempt_at,
       created_at, finished_at, owner, reason) VALUES (?, 'run_1', ?, 'run.finished', 'https://h.example/in', '{}', ?, '[]', ?, ?, ?, 'key_1', ?)`,
  );
  insert.run("msg_pending", 1, "pending", 5, at, null, null);
  insert.run("msg_failed", 2, "failed", null, at, at, "over the cap");
  const rows = db.prepare("SELECT * FROM webhook_deliveries ORDER BY id").all();
  const before = indexesOf(db);

  expect(runMigrations(db)[0]).toBe("0022_webhook_outbox_outlives_runs.sql");
  expect(db.prepare("SELECT * FROM webhook_deliveries ORDER BY id").all()).toEqual(rows);
  expect(indexesOf(db)).toEqual(
    expect.arrayContaining(before.filter((i) => !String((i as { name: string }).name).startsWith("sqlite_"))),
  );
  expect(indexesOf(db).map((i) => (i as { name: string }).name)).toContain("webhook_deliveries_orphaned");
  expect(db.prepare("SELECT on_delete FROM pragma_foreign_key_list('webhook_deliveries')").pluck().all()).toEqual([
    "SET NULL",
  ]);
  db.exec("DELETE FROM runs WHERE id = 'run_1'");
  expect(db.prepare("SELECT id, run_id FROM webhook_deliveries ORDER BY id").all()).toEqual([
    { id: "msg_failed", run_id: null },
    { id: "msg_pending", run_id: null },
  ]);
  expect(() => insert.run("msg_new", 3, "pending", 5, at, null, null)).toThrow(/FOREIGN KEY/);
  expect(db.pragma("foreign_key_check")).toEqual([]);
  db.close();
});
