/**
 * A migration that rebuilds a small table (0022 rebuilds the webhook outbox) must not rewrite
 * the whole database at start: over a file made mostly of run events, a VACUUM there copies
 * every page again (into the write-ahead log first), keeping a large deployment's upgrade from
 * listening for as long and needing the file's size again on disk, to give back a few pages
 * that later writes reuse anyway.
 */
import { copyFileSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { migrationFiles, migrationsDir, runMigrations } from "../../src/store/migrations.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir> | undefined;
afterEach(() => dir?.cleanup());

const at = "2026-01-01T00:00:00.000Z";
const stats = '{"modelCalls":0,"toolCalls":0,"turns":0,"inputTokens":0,"outputTokens":0,"durationMs":0}';

it("migration 0022 over a database of many events rewrites the outbox, not the whole file", () => {
  dir = tempDir();
  const only = join(dir.path, "migrations");
  mkdirSync(only);
  for (const m of migrationFiles(migrationsDir()).filter((f) => f.version < 22)) {
    copyFileSync(join(migrationsDir(), m.file), join(only, m.file));
  }
  const path = join(dir.path, "agent.db");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("foreign_keys = ON");
  runMigrations(db, only);
  db.exec(`
    INSERT INTO sessions (id, owner, workspace, created_at) VALUES ('ses_1', 'key_1', 'w1', '${at}');
    INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at)
      VALUES ('run_1', 'ses_1', 'finished', 'hi', 5, '${stats}', '${at}');
  `);
  // ~8 MB of events, and two deliveries.
  const event = db.prepare("INSERT INTO run_events (run_id, seq, type, data) VALUES ('run_1', ?, 'text.delta', ?)");
  db.transaction(() => {
    for (let seq = 1; seq <= 4000; seq++)
      event.run(seq, JSON.stringify({ type: "text.delta", text: "x".repeat(2000) }));
  })();
  const delivery = db.prepare(
    `INSERT INTO webhook_deliveries (id, run_id, event_seq, type, url, body, status, attempts, next_attempt_at,
       created_at, finished_at, owner, reason) VALUES (?, 'run_1', ?, 'run.finished', 'https://h.example/in', '{}', 'pending', '[]', 5, ?, NULL, 'key_1', NULL)`,
  );
  delivery.run("msg_1", 1, at);
  delivery.run("msg_2", 2, at);
  db.pragma("wal_checkpoint(TRUNCATE)");
  const fileBytes = statSync(path).size;
  expect(fileBytes).toBeGreaterThan(8_000_000);

  expect(runMigrations(db)[0]).toBe("0022_webhook_outbox_outlives_runs.sql");
  // What the migration wrote is in the log: the outbox and the schema, not the events again.
  const loggedBytes = statSync(`${path}-wal`).size;
  expect(loggedBytes).toBeLessThan(fileBytes / 10);
  expect(db.prepare("SELECT count(*) FROM run_events").pluck().get()).toBe(4000);
  expect(db.prepare("SELECT id FROM webhook_deliveries ORDER BY id").pluck().all()).toEqual(["msg_1", "msg_2"]);
  expect(db.pragma("foreign_key_check")).toEqual([]);
  db.close();
});
