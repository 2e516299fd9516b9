import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { migrationFiles, migrationsDir, runMigrations } from "../../src/store/migrations.js";
import { runPgMigrations } from "../../src/store/pg/pg-migrations.js";
import { createPgStore } from "../../src/store/pg/pg-store.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase, pipelinedPool, type TestPgDatabase } from "../helpers/pg-database.js";
import { tempDir } from "../helpers/temp-dir.js";

const T1 = "2026-01-01T00:00:00.000Z";
const T2 = "2026-01-01T00:00:00.001Z";
const stats = '{"modelCalls":0,"toolCalls":0,"turns":0,"inputTokens":0,"outputTokens":0,"durationMs":0}';

/** The session and run the calls belong to, and the calls of two replies as the ledger held them before 0017. */
const BEFORE = [
  `INSERT INTO sessions (id, workspace, created_at) VALUES ('ses_1', 'w', '${T1}')`,
  `INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at)
     VALUES ('run_1', 'ses_1', 'running', 'hi', 5, '${stats}', '${T1}')`,
  ...[
    ["c1", 0, T1],
    ["c2", 1, T1],
    ["c3", 2, T2],
  ].map(
    ([id, ordinal, at]) => `INSERT INTO tool_calls (run_id, id, ordinal, name, input, state, proposed_at)
       VALUES ('run_1', '${id}', ${ordinal}, 'write_file', '{}', 'proposed', '${at}')`,
  ),
];

/** A reply after the migration, in the millisecond of the last reply before it. */
const replyAfter = (store: Store) =>
  store.commitRun(
    "run_1",
    [
      {
        kind: "message",
        message: {
          id: "m_after",
          sessionId: "ses_1",
          runId: "run_1",
          seq: 1,
          role: "assistant",
          content: "",
          toolCalls: ["c4", "c5"].map((id) => ({ id, name: "write_file", input: "{}" })),
          createdAt: T2,
        },
      },
    ],
    [],
  );

/** Calls stored before 0017 are grouped by their time, as they were; calls after it by their reply alone. */
async function expectReplies(store: Store): Promise<void> {
  expect((await store.toolCalls.restOfReply("run_1", "c1")).map((c) => c.id)).toEqual(["c1", "c2"]);
  expect((await store.toolCalls.restOfReply("run_1", "c2")).map((c) => c.id)).toEqual(["c2"]);
  expect((await store.toolCalls.restOfReply("run_1", "c3")).map((c) => c.id)).toEqual(["c3"]);
  expect((await store.toolCalls.restOfReply("run_1", "c4")).map((c) => c.id)).toEqual(["c4", "c5"]);
  expect((await store.toolCalls.restOfReply("run_1", "c5")).map((c) => c.id)).toEqual(["c5"]);
  expect((await store.toolCalls.open("run_1")).map((c) => c.id)).toEqual(["c1", "c2", "c3", "c4", "c5"]);
}

const REPLIES = "SELECT id, reply FROM tool_calls WHERE run_id = 'run_1' ORDER BY ordinal";
const STORED = [
  { id: "c1", reply: null },
  { id: "c2", reply: null },
  { id: "c3", reply: null },
  { id: "c4", reply: 3 },
  { id: "c5", reply: 3 },
];

describe("migration 0017 (the reply of a tool call)", () => {
  let dir: ReturnType<typeof tempDir> | undefined;
  let database: TestPgDatabase | undefined;
  afterEach(async () => {
    dir?.cleanup();
    dir = undefined;
    await database?.drop();
    database = undefined;
  });

  it("on SQLite: calls stored before it keep their replies, told by their time; a later reply in the same millisecond is its own", async () => {
    dir = tempDir();
    const only = join(dir.path, "migrations");
    mkdirSync(only);
    for (const m of migrationFiles(migrationsDir()).filter((f) => f.version < 17)) {
      copyFileSync(join(migrationsDir(), m.file), join(only, m.file));
    }
    const db = new Database(join(dir.path, "agent.db"));
    db.pragma("foreign_keys = ON");
    runMigrations(db, only);
    for (const sql of BEFORE) db.exec(sql);
    expect(runMigrations(db)[0]).toBe("0017_tool_call_replies.sql");
    const store = createSqliteStore(db);
    await replyAfter(store);
    expect(db.prepare(REPLIES).all()).toEqual(STORED);
    await expectReplies(store);
    db.close();
  });

  it("on PostgreSQL: the same, and calls an instance of the version before writes beside a migrated one are read as before", async () => {
    database = await createTestPgDatabase();
    const pool = pipelinedPool(database.url, 2);
    pool.on("error", () => {});
    // The database as before 0017.
    await pool.query("ALTER TABLE tool_calls DROP COLUMN reply");
    await pool.query("DELETE FROM schema_migrations WHERE version = 17");
    for (const sql of BEFORE) await pool.query(sql);
    expect(await runPgMigrations(pool)).toEqual(["0017_tool_call_replies.sql"]);
    const store = createPgStore(pool);
    try {
      await replyAfter(store);
      expect((await pool.query(REPLIES)).rows).toEqual(STORED);
      await expectReplies(store);
      // An instance not yet upgraded (a rolling restart) writes a reply without its key, in the
      // millisecond of the last reply: its calls are grouped by their time among those without one.
      for (const [id, ordinal] of [
        ["c6", 5],
        ["c7", 6],
      ]) {
        await pool.query(
          `INSERT INTO tool_calls (run_id, id, ordinal, name, input, state, proposed_at)
           VALUES ('run_1', $1, $2, 'write_file', '{}', 'proposed', $3)`,
          [id, ordinal, T2],
        );
      }
      expect((await store.toolCalls.restOfReply("run_1", "c4")).map((c) => c.id)).toEqual(["c4", "c5"]);
      expect((await store.toolCalls.restOfReply("run_1", "c6")).map((c) => c.id)).toEqual(["c6", "c7"]);
      // c3's reply, before 0017 and in the same millisecond, is not told from c6's: the old grouping.
      expect((await store.toolCalls.restOfReply("run_1", "c3")).map((c) => c.id)).toEqual(["c3", "c6", "c7"]);
    } finally {
      await store.close();
    }
  });
});
