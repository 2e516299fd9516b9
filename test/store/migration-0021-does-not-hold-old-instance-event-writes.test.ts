/**
 * A rolling upgrade over PostgreSQL (README "Running several instances", "Rolling restart"):
 * the new release's first instance migrates the shared database while the instances of the
 * release before it go on executing runs. Every step of a run writes rows into run_events
 * (the largest table: one row per text.delta, per message, per event of every run ever kept).
 *
 * Migration 0021 builds an index on run_events. Built with a plain `CREATE INDEX` in the
 * migration's transaction, it would take a SHARE lock on run_events for the whole build: every
 * event insert of an old instance (run commits, starts, steers, cancels) would wait for the
 * migration's commit, and fail past the statement_timeout (503s, runs stopped and resumed
 * elsewhere).
 *
 * Here an old instance's transaction writing an event is in flight when the migration starts,
 * so the migration waits for it (as it would take its time on a large table): a second old
 * instance's ordinary event write meanwhile must not be held behind the migration.
 *
 * Expected: applying a migration does not hold the running instances' writes to run_events
 * (an index built CONCURRENTLY, outside the migration's transaction, takes a lock that does not
 * conflict with inserts): the second write completes while the migration is still under way.
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

const at = "2026-01-01T00:00:00.000Z";
const stats = '{"modelCalls":0,"toolCalls":0,"turns":0,"inputTokens":0,"outputTokens":0,"durationMs":0}';
const event = (run: string, seq: number) =>
  `INSERT INTO run_events (run_id, seq, type, data)
   VALUES ('${run}', ${seq}, 'text.delta', '{"type":"text.delta","text":"x","runId":"${run}","seq":${seq},"at":"${at}"}')`;

it("an old instance's event write is not held while the new release applies migration 0021", async () => {
  const name = `agent_review_up_${process.pid}_${Date.now()}`;
  await admin(`CREATE DATABASE ${name}`);
  cleanups.push(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  const url = databaseUrl(inject("pgServerUrl"), name);

  // The database as the release before 0021 left it.
  const dir = tempDir("pg-before-0021-");
  cleanups.push(() => dir.cleanup());
  const before = join(dir.path, "migrations");
  mkdirSync(before);
  for (const m of migrationFiles(migrationsDir("postgres")).filter((f) => f.version < 21)) {
    copyFileSync(join(migrationsDir("postgres"), m.file), join(before, m.file));
  }
  const oldPool = new pg.Pool({ connectionString: url, max: 1 });
  cleanups.push(() => oldPool.end());
  await runPgMigrations(oldPool, { dir: before });
  await oldPool.query(`INSERT INTO sessions (id, owner, workspace, created_at) VALUES ('ses_1', '', 'w1', '${at}')`);
  for (const run of ["run_1", "run_2"]) {
    await oldPool.query(
      `INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at)
       VALUES ('${run}', 'ses_1', '${run === "run_1" ? "running" : "queued"}', 'hi', 5, '${stats}', '${at}')`,
    );
  }

  // Old instance A: a commit of its run's events under way.
  const oldA = new pg.Client({ connectionString: url, application_name: "old-a" });
  await oldA.connect();
  cleanups.push(() => oldA.end().catch(() => {}));
  await oldA.query("BEGIN");
  await oldA.query(event("run_1", 1));

  // The new release's first instance starts and migrates.
  const newPool = new pg.Pool({ connectionString: url, max: 2, application_name: "new-release" });
  cleanups.push(() => newPool.end());
  const migrating = runPgMigrations(newPool).then(
    (ran) => ({ ran, error: null }),
    (error: Error) => ({ ran: [] as string[], error: error.message }),
  );
  const watch = new pg.Client({ connectionString: url });
  await watch.connect();
  cleanups.push(() => watch.end());
  const waitingOnLock = async (app: string) =>
    (
      await watch.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND wait_event_type = 'Lock'",
        [name, app],
      )
    ).rows[0].n > 0;
  await until(() => waitingOnLock("new-release"), Boolean, "the migration to be under way");

  // Old instance B: an ordinary write of another run's event, while the migration is under way.
  const oldB = new pg.Client({ connectionString: url, application_name: "old-b" });
  await oldB.connect();
  cleanups.push(() => oldB.end().catch(() => {}));
  let written = false;
  const writing = oldB.query(event("run_2", 1)).then(() => {
    written = true;
  });
  // Undone first: A's transaction ends, so the migration and B's write go through.
  cleanups.push(async () => {
    await oldA.query("ROLLBACK").catch(() => {});
    await migrating;
    await writing.catch(() => {});
  });
  const outcome = await until(
    async () => (written ? "written" : (await waitingOnLock("old-b")) ? "held by the migration's lock" : null),
    (o) => o !== null,
    "the old instance's write to be written or held",
  );
  const stillMigrating = await waitingOnLock("new-release");
  expect({ outcome, stillMigrating }).toEqual({ outcome: "written", stillMigrating: true });
}, 30_000);
