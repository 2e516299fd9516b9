import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { migrationFiles, migrationsDir, runMigrations } from "../../src/store/migrations.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir> | undefined;
afterEach(() => dir?.cleanup());

const at = "2026-01-01T00:00:00.000Z";
const stats = '{"modelCalls":0,"toolCalls":0,"turns":0,"inputTokens":0,"outputTokens":0,"durationMs":0}';

/** A database migrated up to (not including) `version`, with two sessions and a run in each. */
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
  for (const n of [1, 2]) {
    db.exec(`
      INSERT INTO sessions (id, workspace, created_at) VALUES ('ses_${n}', 'w${n}', '${at}');
      INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at)
        VALUES ('run_${n}', 'ses_${n}', 'running', 'hi', 5, '${stats}', '${at}');
    `);
  }
  return db;
}

const insertEvent = (db: Database.Database, runId: string, seq: number) =>
  db
    .prepare("INSERT INTO run_events (run_id, seq, type, data) VALUES (?, ?, 'text.delta', ?)")
    .run(runId, seq, JSON.stringify({ type: "text.delta", text: `${runId}:${seq}`, runId, seq, at }));

it("migration 0011 keeps every event and stores new ones in the order they are written, whatever their run", async () => {
  const db = databaseBefore(11);
  for (let seq = 1; seq <= 3; seq++) for (const runId of ["run_2", "run_1"]) insertEvent(db, runId, seq);
  expect(runMigrations(db)[0]).toBe("0011_run_events_append_order.sql");

  const store = createSqliteStore(db);
  for (const runId of ["run_1", "run_2"]) {
    const events = await store.events.after(runId, 0);
    expect(events.map((e) => [e.seq, JSON.parse(e.data).text])).toEqual([1, 2, 3].map((s) => [s, `${runId}:${s}`]));
    expect(await store.events.lastSeq(runId)).toBe(3);
  }
  // New events interleaved across runs lie in the table in that order (a rowid table: appended).
  for (let seq = 4; seq <= 6; seq++) for (const runId of ["run_2", "run_1"]) insertEvent(db, runId, seq);
  const stored = db.prepare("SELECT run_id, seq FROM run_events WHERE seq > 3 ORDER BY rowid").all();
  expect(stored).toEqual([4, 5, 6].flatMap((seq) => ["run_2", "run_1"].map((run_id) => ({ run_id, seq }))));
  // Reads by run still go through an index, and (run_id, seq) stays unique.
  const plan = db
    .prepare("EXPLAIN QUERY PLAN SELECT seq, type, data FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq")
    .all("run_1", 0) as { detail: string }[];
  expect(plan.map((p) => p.detail).join(" ")).toMatch(/USING INDEX run_events_run_seq/);
  expect(() => insertEvent(db, "run_1", 6)).toThrow(/UNIQUE/);
  expect(() => insertEvent(db, "run_missing", 1)).toThrow(/FOREIGN KEY/);
  // A session's deletion still takes its runs' events with it.
  db.exec("DELETE FROM sessions WHERE id = 'ses_1'");
  expect(db.prepare("SELECT DISTINCT run_id FROM run_events").all()).toEqual([{ run_id: "run_2" }]);
  expect(db.pragma("foreign_key_check")).toEqual([]);
  db.close();
});
