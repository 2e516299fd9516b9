import pg from "pg";
import { migrationFiles, migrationsDir } from "../migrations.js";
import { refuseNewerSchema } from "../schema-too-new.js";
import { applyOutsideTransaction, runsOutsideTransaction } from "./pg-migration-outside-transaction.js";

/** The advisory lock key every instance takes to migrate ("agent-server migrations"). */
export const MIGRATION_LOCK = 4_417_302_011;

/** How often a start waiting for the migration lock tries it again. */
const LOCK_RETRY_MS = 250;
/** How often a start still waiting for the migration lock says so again. */
export const LOCK_WAIT_REPORT_MS = 30_000;

/** The connection holding the migration lock, as PostgreSQL describes it (null fields: not visible to this role). */
export interface MigrationLockHolder {
  pid: number;
  applicationName: string | null;
  clientAddr: string | null;
  /** The holder's state (`active`, `idle`, `idle in transaction`), and since when, ISO 8601. */
  state: string | null;
  since: string | null;
}

export interface PgMigrationOptions {
  dir?: string;
  /**
   * Told when the migration lock is held by another connection (another instance migrating,
   * or one stopped or hung while holding it), then every LOCK_WAIT_REPORT_MS while this start
   * waits; `holder` is null when it ended meanwhile. Never told when the lock is free.
   */
  onLockWait?: (wait: { holder: MigrationLockHolder | null; waitedMs: number }) => void;
}

/**
 * Applies the PostgreSQL migrations not yet applied, in order, each in its own transaction with
 * its row in `schema_migrations` (a file marked NO_TRANSACTION: statement by statement, its row
 * written once they all succeeded), while holding `pg_advisory_lock`: instances starting together
 * wait for each other and the later ones find nothing left to do. Returns the files applied.
 * They run on a client of their own, opened with the pool's settings but without its query
 * timeout: a migration may rewrite a large table, and waits for another instance's.
 * A database a newer release migrated is refused with SchemaTooNewError, nothing applied.
 * A start that finds the lock taken waits for it as long as it is held, saying so (onLockWait):
 * PostgreSQL cannot tell a slow migration from a holder that stopped (SIGSTOP, a hung host).
 */
export async function runPgMigrations(
  pool: pg.Pool,
  { dir = migrationsDir("postgres"), onLockWait }: PgMigrationOptions = {},
): Promise<string[]> {
  const client = new pg.Client({ ...pool.options, query_timeout: undefined, statement_timeout: undefined });
  await client.connect();
  try {
    await takeMigrationLock(client, onLockWait);
    try {
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
      );
      const rows = (
        await client.query<{ version: number; name: string }>("SELECT version, name FROM schema_migrations")
      ).rows;
      const files = migrationFiles(dir);
      refuseNewerSchema(rows, files);
      const applied = new Set(rows.map((r) => r.version));
      const ran: string[] = [];
      for (const { version, file, sql } of files) {
        if (applied.has(version)) continue;
        const record = () =>
          client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
            version,
            file,
            new Date().toISOString(),
          ]);
        if (runsOutsideTransaction(sql)) {
          await applyOutsideTransaction({ client, sql });
          await record();
        } else {
          await client.query("BEGIN");
          try {
            await client.query(sql);
            await record();
            await client.query("COMMIT");
          } catch (err) {
            await client.query("ROLLBACK").catch(() => {});
            throw err;
          }
        }
        ran.push(file);
      }
      return ran;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
  }
}

async function tryLock(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1) AS locked", [
    MIGRATION_LOCK,
  ]);
  return rows[0]?.locked === true;
}

/** Takes the migration lock, waiting while another connection holds it (told to onLockWait). */
async function takeMigrationLock(client: pg.Client, onLockWait: PgMigrationOptions["onLockWait"]): Promise<void> {
  const started = performance.now();
  let reportedAt = Number.NEGATIVE_INFINITY;
  while (!(await tryLock(client))) {
    const waitedMs = performance.now() - started;
    if (onLockWait && waitedMs - reportedAt >= LOCK_WAIT_REPORT_MS) {
      reportedAt = waitedMs;
      onLockWait({ holder: await lockHolder(client), waitedMs: Math.round(waitedMs) });
    }
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
}

/**
 * The connection holding the migration lock, or null. A bigint advisory key is held as
 * classid (its high 32 bits) and objid (its low 32 bits), objsubid 1.
 */
async function lockHolder(client: pg.Client): Promise<MigrationLockHolder | null> {
  const { rows } = await client.query<{
    pid: number;
    application_name: string | null;
    client_addr: string | null;
    state: string | null;
    since: Date | null;
  }>(
    `SELECT a.pid, a.application_name, host(a.client_addr) AS client_addr, a.state, a.state_change AS since
     FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
       AND l.classid::bigint = ($1::bigint >> 32) AND l.objid::bigint = ($1::bigint & 4294967295)
     LIMIT 1`,
    [MIGRATION_LOCK],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    pid: row.pid,
    applicationName: row.application_name || null,
    clientAddr: row.client_addr,
    state: row.state,
    since: row.since ? row.since.toISOString() : null,
  };
}
