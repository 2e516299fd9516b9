/**
 * A rolling upgrade over PostgreSQL: the new release's first instance applies migration 0022
 * (the webhook outbox's foreign key to runs) while an instance of the release before it goes
 * on executing runs. That instance's ordinary commit of a run's end updates the run's row and
 * inserts the run.finished delivery into the outbox, in one transaction. The migration waits
 * for such a transaction and then applies; neither fails. (Taking the outbox before runs, the
 * reverse of every run write's order, deadlocked: PostgreSQL failed the migration.)
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, expect, inject, it } from "vitest";
import { migrationFiles, migrationsDir } from "../../src/store/migrations.js";
import { runPgMigrations } from "../../src/store/pg/pg-migrations.js";
import { databaseUrl } from "../helpers/pg-cluster.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: inject("pgServerUrl") });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

it("migration 0022 applies while an instance of the previous release commits a run's end with its delivery (no deadlock)", async () => {
  const name = `agent_review_${process.pid}_${Date.now()}`;
  await admin(`CREATE DATABASE ${name}`);
  cleanups.push(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  const url = databaseUrl(inject("pgServerUrl"), name);

  // The database as the previous release left it: migrated up to 0021.
  const dir = tempDir("pg-before-0022-");
  cleanups.push(() => dir.cleanup());
  const before = join(dir.path, "migrations");
  mkdirSync(before);
  for (const m of migrationFiles(migrationsDir("postgres")).filter((f) => f.version < 22)) {
    copyFileSync(join(migrationsDir("postgres"), m.file), join(before, m.file));
  }
  const oldPool = new pg.Pool({ connectionString: url, max: 1 });
  cleanups.push(() => oldPool.end());
  await runPgMigrations(oldPool, { dir: before });

  const old = new pg.Client({ connectionString: url });
  await old.connect();
  cleanups.push(() => old.end().catch(() => {}));
  const at = "2026-01-01T00:00:00.000Z";
  const stats = '{"modelCalls":1,"toolCalls":0,"turns":1,"inputTokens":10,"outputTokens":5,"durationMs":5}';
  await old.query(`INSERT INTO sessions (id, owner, workspace, created_at) VALUES ('ses_1', '', 'w1', '${at}')`);
  await old.query(
    `INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at)
     VALUES ('run_1', 'ses_1', 'running', 'hi', 5, '${stats}', '${at}')`,
  );

  // The old instance's commit of the run's end: the run's row first...
  await old.query("BEGIN");
  await old.query(
    `UPDATE runs SET status = 'finished', stop_reason = 'complete', finished_at = '${at}' WHERE id = 'run_1'`,
  );

  // ...while the new release's first instance starts and migrates.
  const newPool = new pg.Pool({ connectionString: url, max: 2, application_name: "new-release" });
  cleanups.push(() => newPool.end());
  const migrating = runPgMigrations(newPool).then(
    (ran) => ({ ran, error: null }),
    (error: Error) => ({ ran: [], error: error.message }),
  );
  // Watched from a connection of its own (a transaction sees one snapshot of pg_stat_activity).
  const watch = new pg.Client({ connectionString: url });
  await watch.connect();
  cleanups.push(() => watch.end());
  await until(
    async () =>
      (
        await watch.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'new-release' AND wait_event_type = 'Lock'",
          [name],
        )
      ).rows[0].n,
    (n) => n > 0,
    "the migration to wait for the old instance's transaction",
  );

  // ...then the delivery of its run.finished, and the commit.
  const committed = (async () => {
    await old.query(
      `INSERT INTO webhook_deliveries (id, run_id, event_seq, type, url, body, status, attempts, next_attempt_at, created_at, owner)
       VALUES ('msg_1', 'run_1', 7, 'run.finished', 'https://h.example/in', '{}', 'pending', '[]', 0, '${at}', '')`,
    );
    await old.query("COMMIT");
  })().then(
    () => null,
    (error: Error) => error.message,
  );

  expect({ oldCommit: await committed, migration: await migrating }).toEqual({
    oldCommit: null,
    migration: { ran: expect.arrayContaining(["0022_webhook_outbox_outlives_runs.sql"]), error: null },
  });
}, 30_000);
