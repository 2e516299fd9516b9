import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { migrationsDir, runMigrations } from "../../src/store/migrations.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir> | undefined;
afterEach(() => dir?.cleanup());

const count = (db: Database.Database, table: string) =>
  (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

it("migration 0006 rebuilds runs for status queued, keeping every column and the rows that reference runs", async () => {
  dir = tempDir();
  const only = join(dir.path, "migrations");
  mkdirSync(only);
  const before = [
    "0001_init",
    "0002_one_active_run",
    "0003_stop_conditions",
    "0004_session_provider_profile",
    "0005_webhooks",
  ];
  for (const name of before) copyFileSync(join(migrationsDir(), `${name}.sql`), join(only, `${name}.sql`));
  const db = new Database(join(dir.path, "agent.db"));
  db.pragma("foreign_keys = ON");
  runMigrations(db, only);
  const at = "2026-01-01T00:00:00.000Z";
  const stats = '{"modelCalls":1,"toolCalls":0,"turns":1,"inputTokens":0,"outputTokens":0,"durationMs":1}';
  db.exec(`
    INSERT INTO sessions (id, workspace, created_at) VALUES ('ses_1', 'w', '${at}');
    INSERT INTO runs (id, session_id, status, stop_reason, stop_detail, input, max_turns, max_tokens, loop_repeat_limit,
        planning, stats, created_at, finished_at, webhook)
      VALUES ('run_1', 'ses_1', 'finished', 'budget_exhausted', 'spent', 'hi', 5, 100, 4, 1, '${stats}', '${at}', '${at}',
        '{"url":"https://hooks.example.com/","events":["run.finished"]}');
    INSERT INTO messages (id, session_id, run_id, seq, role, content, created_at) VALUES ('m1', 'ses_1', 'run_1', 1, 'user', 'hi', '${at}');
    INSERT INTO run_events (run_id, seq, type, data) VALUES ('run_1', 1, 'run.started', '{}');
    INSERT INTO webhook_deliveries (id, run_id, event_seq, type, url, body, status, attempts, created_at)
      VALUES ('d1', 'run_1', 1, 'run.finished', 'https://hooks.example.com/', '{}', 'delivered', '[]', '${at}');
  `);
  // 0006 and the migrations after it, each applied over the rows before it.
  expect(runMigrations(db)[0]).toBe("0006_busy_sessions.sql");
  for (const table of ["runs", "messages", "run_events", "webhook_deliveries"]) expect(count(db, table)).toBe(1);
  expect(db.pragma("foreign_key_check")).toEqual([]);
  const run = await createSqliteStore(db).runs.get("run_1");
  expect(run).toMatchObject({
    stopReason: "budget_exhausted",
    stopDetail: "spent",
    maxTokens: 100,
    loopRepeatLimit: 4,
    planning: true,
    webhook: { url: "https://hooks.example.com/", events: ["run.finished"] },
  });
  // One active run beside any number of queued ones; a second active one is refused.
  const insert = db.prepare(
    "INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at) VALUES (?, 'ses_1', ?, 'x', 5, ?, ?)",
  );
  insert.run("run_2", "running", stats, at);
  insert.run("run_3", "queued", stats, at);
  insert.run("run_4", "queued", stats, at);
  expect(() => insert.run("run_5", "awaiting_approval", stats, at)).toThrow(/UNIQUE/);
  expect(() => insert.run("run_6", "waiting", stats, at)).toThrow(/CHECK/);
  db.exec("DELETE FROM sessions WHERE id = 'ses_1'");
  for (const table of ["runs", "messages", "run_events"]) expect(count(db, table)).toBe(0);
  // A delivery outlives its run (0022): left without it, for the store to send or drop.
  expect(db.prepare("SELECT id, run_id FROM webhook_deliveries").all()).toEqual([{ id: "d1", run_id: null }]);
  db.close();
});
