import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { migrationsDir, runMigrations } from "../../src/store/migrations.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir> | undefined;
afterEach(() => dir?.cleanup());

/**
 * A database as the release before left it: 0001 and 0002 applied, one run with a message, an
 * event, a call and a step; the run's input (200 KB) makes its table most of the file.
 */
function databaseAtInit(): Database.Database {
  dir = tempDir();
  const only = join(dir.path, "migrations");
  mkdirSync(only);
  for (const file of ["0001_init.sql", "0002_one_active_run.sql"])
    copyFileSync(join(migrationsDir(), file), join(only, file));
  const db = new Database(join(dir.path, "agent.db"));
  db.pragma("foreign_keys = ON");
  runMigrations(db, only);
  const at = "2026-01-01T00:00:00.000Z";
  db.exec(`
    INSERT INTO sessions (id, workspace, created_at) VALUES ('ses_1', 'w', '${at}');
    INSERT INTO runs (id, session_id, status, stop_reason, input, max_turns, stats, created_at, finished_at)
      VALUES ('run_1', 'ses_1', 'finished', 'complete', '${"hi".repeat(100_000)}', 5, '{"modelCalls":1,"toolCalls":0,"turns":1,"inputTokens":0,"outputTokens":0,"durationMs":1}', '${at}', '${at}');
    INSERT INTO messages (id, session_id, run_id, seq, role, content, created_at) VALUES ('m1', 'ses_1', 'run_1', 1, 'user', 'hi', '${at}');
    INSERT INTO run_events (run_id, seq, type, data) VALUES ('run_1', 1, 'run.started', '{}');
    INSERT INTO tool_calls (run_id, id, ordinal, name, input, state, proposed_at) VALUES ('run_1', 'c1', 0, 'list_files', '{}', 'proposed', '${at}');
    INSERT INTO run_steps (run_id, turn, data) VALUES ('run_1', 1, '{}');
  `);
  return db;
}

const count = (db: Database.Database, table: string) =>
  (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

describe("migration 0003 (stop conditions)", () => {
  it("rebuilds runs without losing or orphaning the rows that reference them, and keeps foreign keys and indexes", async () => {
    const db = databaseAtInit();
    expect(runMigrations(db)).toContain("0003_stop_conditions.sql");
    for (const table of ["runs", "messages", "run_events", "tool_calls", "run_steps"]) expect(count(db, table)).toBe(1);
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(db.pragma("foreign_key_check")).toEqual([]);
    // The old table's pages, most of the file, are given back (the later rebuilds of small
    // tables leave theirs free, for later writes: less than a quarter of the file).
    const pages = db.pragma("page_count", { simple: true }) as number;
    expect(db.pragma("freelist_count", { simple: true })).toBeLessThan(pages / 4);
    const indexes = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'runs'").all();
    expect(indexes.map((i) => (i as { name: string }).name).sort()).toEqual(
      expect.arrayContaining(["runs_idempotency", "runs_live", "runs_one_active", "runs_session"]),
    );
    const run = await createSqliteStore(db).runs.get("run_1");
    expect(run).toMatchObject({ stopReason: "complete", stopDetail: null, loopRepeatLimit: 3, planning: false });
    expect(run?.maxTokens).toBeNull();
    // The cascade still holds on the rebuilt table.
    db.exec("DELETE FROM sessions WHERE id = 'ses_1'");
    for (const table of ["runs", "messages", "run_events", "tool_calls", "run_steps"]) expect(count(db, table)).toBe(0);
    db.close();
  });

  it("the new stop reasons are accepted, an unknown one still refused", () => {
    const db = databaseAtInit();
    runMigrations(db);
    const setReason = db.prepare("UPDATE runs SET stop_reason = ? WHERE id = 'run_1'");
    setReason.run("loop_detected");
    setReason.run("budget_exhausted");
    expect(() => setReason.run("gave_up")).toThrow(/CHECK constraint/);
    db.close();
  });
});
