import pg from "pg";
import { carriesWebhook } from "../../domain/webhook-payload.js";
import { StorageError, sessionHasRuns } from "../errors.js";
import { lastPlanSql } from "../events.js";
import { GROUP_COMMIT_WINDOW_MS } from "../group-commit.js";
import { type KeyedRunRow, keyedRunFromRow, keyedRunSql, runInputHoldFromRow, runInputSql } from "../keyed-run.js";
import { RUN_ACCESS_COLUMNS, type RunAccessRow, runAccessFromRow } from "../run-access.js";
import { ACTIVE_COLUMNS, type RunRow, runColumns, runFromRow } from "../runs.js";
import { type SessionAccess, type SessionRow, sessionColumns, sessionFromRow } from "../sessions.js";
import { StorageHealth } from "../storage-health.js";
import type { LastPlanEvent, Store, StoredEvent } from "../store.js";
import { DROP_SETTLED_ORPHANS } from "../webhook-orphans.js";
import { RunTargets, type TargetRow, targetOfRun } from "../webhook-targets.js";
import { insertStatement, runBatch, type Statement } from "./pg-batch.js";
import { changeStatements, eventRows } from "./pg-changes.js";
import { DEFAULT_QUERY_TIMEOUT_MS, poolSettings } from "./pg-connection.js";
import { translatePgError } from "./pg-errors.js";
import { pgGroupCommit } from "./pg-group-commit.js";
import { fenceStatement, pgLeases, takeLeaseStatement } from "./pg-leases.js";
import { controlNotification, PgListener } from "./pg-listener.js";
import { pgMessages } from "./pg-messages.js";
import { type PgMigrationOptions, runPgMigrations } from "./pg-migrations.js";
import { ownerLimitStatements } from "./pg-owner-limit.js";
import { eventsWithin, pgPages } from "./pg-pages.js";
import { pgInputs, pgQueue, queueFreeStatement, takeInputStatement } from "./pg-queue.js";
import { pgSteps } from "./pg-run-lists.js";
import { decodeRows, encodeValues } from "./pg-text.js";
import { pgToolCalls } from "./pg-tool-calls.js";
import { deliveryStatements, pgWebhooks } from "./pg-webhooks.js";

export interface OpenPgStoreOptions {
  /** A `postgres://` connection string. */
  url: string;
  /** Connections in the pool. */
  maxConnections?: number;
  /** The group commit's window for `commitRun` (see GroupCommit); GROUP_COMMIT_WINDOW_MS by default. */
  groupCommitMs?: number;
  /** How long a statement may wait for its answer (see poolSettings); DEFAULT_QUERY_TIMEOUT_MS by default. */
  queryTimeoutMs?: number;
  /** Told while the start waits for another connection's migration lock (see runPgMigrations). */
  onMigrationLockWait?: PgMigrationOptions["onLockWait"];
}

/**
 * The Store over a PostgreSQL pool (node-postgres) whose connections pipeline (`pipeline: true`,
 * as openPgStore makes it; another pool is refused with a TypeError). Reads are single
 * statements on any pooled connection; every write is one batch of statements run by runBatch
 * in one transaction. Both send text values encoded and read them back decoded (pg-text.ts:
 * U+0000 held losslessly).
 */
export function createPgStore(pool: pg.Pool, { groupCommitMs = GROUP_COMMIT_WINDOW_MS } = {}): Store {
  // runBatch queries a connection again before its last query answered: node-postgres deprecates
  // that on a connection that does not pipeline (and pg 9 drops it).
  if ((pool as unknown as { options: { pipeline?: boolean } }).options.pipeline !== true) {
    throw new TypeError("createPgStore needs a pool created with pipeline: true");
  }
  const health = new StorageHealth();
  const rows = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> => {
    try {
      return decodeRows((await pool.query<R>(text, encodeValues(values))).rows);
    } catch (err) {
      throw translatePgError(err);
    }
  };
  const first = async <R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R | null> =>
    (await rows<R>(text, values))[0] ?? null;
  const write = async (statements: Statement[]): Promise<pg.QueryResult[]> => {
    try {
      const results = await runBatch(pool, statements);
      health.recordSuccess();
      return results;
    } catch (err) {
      const translated = translatePgError(err);
      if (translated instanceof StorageError) health.recordFailure(translated);
      throw translated;
    }
  };
  // The events' statement announces them too: peers hear of them once committed.
  const commitEvents = async (statements: Statement[], events: Parameters<typeof eventRows>[0]) => {
    const { stored, statement } = eventRows(events);
    await write(statement ? [...statements, statement] : statements);
    return stored;
  };
  const group = pgGroupCommit({ windowMs: groupCommitMs, write });
  const listener = new PgListener({ connection: pool.options });
  const targets = new RunTargets();
  const pages = pgPages(rows);
  // pg.Pool reports a pooled idle connection that broke here; the next query reconnects.
  pool.on("error", (err) => health.recordFailure(err));

  return {
    shared: true,
    sessions: {
      insert: async (session, limit) =>
        void (await write([
          ...ownerLimitStatements("sessions", limit),
          insertStatement("sessions", sessionColumns(session)),
        ])),
      get: async (id, owner) => {
        const row =
          owner === undefined
            ? await first<SessionRow>("SELECT * FROM sessions WHERE id = $1", [id])
            : await first<SessionRow>("SELECT * FROM sessions WHERE id = $1 AND owner IS NOT DISTINCT FROM $2", [
                id,
                owner,
              ]);
        return row ? sessionFromRow(row) : null;
      },
      access: (id) => first<SessionAccess>("SELECT owner FROM sessions WHERE id = $1", [id]),
      list: pages.sessions,
      // The lock waits for any run insert in flight (its foreign key's share lock), which the
      // delete's own snapshot, taken after it, then sees; an insert after it meets no session.
      delete: async (id) => {
        const [locked, deleted] = await write([
          { text: "SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", values: [id] },
          {
            text: `DELETE FROM sessions WHERE id = $1
                   AND NOT EXISTS (SELECT 1 FROM runs WHERE session_id = $1 AND status NOT IN ('finished', 'queued'))
                   AND NOT EXISTS (SELECT 1 FROM runs WHERE session_id = $1 AND status = 'queued')`,
            values: [id],
          },
          // Its runs' pending webhook deliveries stay (run_id NULL) to be sent; their settled ones go.
          { text: DROP_SETTLED_ORPHANS },
        ]);
        if ((locked?.rowCount ?? 0) === 0) return false;
        if ((deleted?.rowCount ?? 0) === 0) throw sessionHasRuns(id);
        return true;
      },
      countOf: async (owner) =>
        Number((await first<{ n: string }>("SELECT count(*) AS n FROM sessions WHERE owner = $1", [owner]))?.n ?? 0),
      sharedWorkspaceInUse: async (workspace) =>
        (await first("SELECT 1 FROM sessions WHERE workspace = $1 AND workspace_shared = 1 LIMIT 1", [workspace])) !==
        null,
    },
    runs: {
      create: async (run, events, { lease, limit, takesInput, unlessQueueHeld } = {}) => {
        const stored = await commitEvents(
          [
            ...(unlessQueueHeld ? [queueFreeStatement(run.sessionId)] : []),
            ...ownerLimitStatements("runs", limit),
            // The run (its foreign key locking the session row) before the input it takes: a
            // session's delete locks that row, then its cascade the input's.
            insertStatement("runs", runColumns(run)),
            ...(takesInput === undefined ? [] : [takeInputStatement(takesInput)]),
            ...(lease ? [takeLeaseStatement(run.id, lease)] : []),
            ...deliveryStatements(events, targetOfRun(run)),
          ],
          events,
        );
        targets.remember(run.id, targetOfRun(run));
        return stored;
      },
      get: async (id) => {
        const row = await first<RunRow>("SELECT * FROM runs WHERE id = $1", [id]);
        return row ? runFromRow(row) : null;
      },
      access: async (id) => {
        const row = await first<RunAccessRow>(
          `SELECT ${RUN_ACCESS_COLUMNS} FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = $1`,
          [id],
        );
        return row ? runAccessFromRow(row) : null;
      },
      keyed: async (sessionId, key, input) => {
        const row = await first<KeyedRunRow>(keyedRunSql({ session: "$1", key: "$2", input: "$3" }), [
          sessionId,
          key,
          input,
        ]);
        return row ? keyedRunFromRow(row) : null;
      },
      inputHolds: async (id, input) => {
        const row = await first<{ session_id: string; same_input: boolean }>(runInputSql({ id: "$1", input: "$2" }), [
          id,
          input,
        ]);
        return row ? runInputHoldFromRow(row) : null;
      },
      active: async (sessionId) => {
        const row = await first<{ id: string; idempotency_key: string | null }>(
          `SELECT ${ACTIVE_COLUMNS} FROM runs WHERE session_id = $1 AND status NOT IN ('finished', 'queued') ORDER BY id LIMIT 1`,
          [sessionId],
        );
        return row ? { id: row.id, idempotencyKey: row.idempotency_key } : null;
      },
      cancelRequested: async (ids) =>
        (
          await rows<{ id: string }>(
            "SELECT id FROM runs WHERE id = ANY($1::text[]) AND cancel_requested_at IS NOT NULL AND status <> 'finished'",
            [ids],
          )
        ).map((r) => r.id),
      unfinished: async () =>
        (await rows<RunRow>("SELECT * FROM runs WHERE status NOT IN ('finished', 'queued') ORDER BY id")).map(
          runFromRow,
        ),
      list: pages.runs,
      ...pgQueue(rows, write),
    },
    commitRun: async (runId, changes, events, fence) => {
      // A run's target is fixed when it is created: known here, or read (once) before the batch.
      const known = targets.known(runId);
      const target = !events.some((event) => carriesWebhook(event.type))
        ? null
        : known !== undefined
          ? known
          : targets.read(runId, await first<TargetRow>("SELECT session_id, webhook FROM runs WHERE id = $1", [runId]));
      targets.settle(events);
      const { stored, statement } = eventRows(events);
      await group.add({
        runId,
        statements: [
          ...(fence ? [fenceStatement(fence)] : []),
          ...changes.flatMap((change) => changeStatements(runId, change)),
          ...deliveryStatements(events, target),
          ...(statement ? [statement] : []),
        ],
      });
      return stored;
    },
    commitRequest: async (runId, changes) =>
      void (await write([...changes.flatMap((change) => changeStatements(runId, change)), controlNotification(runId)])),
    messages: pgMessages(rows, first),
    events: {
      after: (runId, seq, limit) =>
        rows<StoredEvent>(
          "SELECT seq, type, data FROM run_events WHERE run_id = $1 AND seq > $2::bigint ORDER BY seq LIMIT $3",
          [runId, seq, limit ?? null],
        ),
      afterWithin: (runId, seq, page) => eventsWithin(rows, runId, seq, page),
      lastSeq: async (runId) =>
        (await first<{ seq: number | null }>("SELECT max(seq) AS seq FROM run_events WHERE run_id = $1", [runId]))
          ?.seq ?? 0,
      ofType: (runId, type) =>
        rows<StoredEvent>("SELECT seq, type, data FROM run_events WHERE run_id = $1 AND type = $2 ORDER BY seq", [
          runId,
          type,
        ]),
      headsOfType: (runId, type, chars) =>
        rows<{ seq: number; head: string }>(
          "SELECT seq, substr(data, 1, $3) AS head FROM run_events WHERE run_id = $1 AND type = $2 ORDER BY seq",
          [runId, type, chars],
        ),
      lastPlan: (runId, within) => first<LastPlanEvent>(lastPlanSql("$1", "$2"), [runId, within]),
    },
    toolCalls: pgToolCalls(rows, first),
    steps: pgSteps(rows),
    inputs: pgInputs(rows, write),
    webhooks: pgWebhooks(rows, write),
    leases: pgLeases(rows, write),
    probeWrites: async () => {
      // The heartbeat, then a few pages written in a savepoint rolled back at once: a full disk fails here.
      await write([
        {
          text: `INSERT INTO server_heartbeat (id, at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET at = excluded.at`,
          values: [new Date().toISOString()],
        },
        { text: "SAVEPOINT probe" },
        { text: "INSERT INTO server_probe (data) VALUES (decode(repeat('00', 16384), 'hex'))" },
        { text: "ROLLBACK TO SAVEPOINT probe" },
      ]);
    },
    writeFailure: () => health.failure,
    notifications: listener,
    close: async () => {
      // A group still waiting for its window is sent, and its writes settled (a refused group's
      // run again alone), before the pool ends.
      await group.flush();
      await listener.close();
      await pool.end();
    },
  };
}

/**
 * Connects to PostgreSQL, applies pending migrations (under an advisory lock: instances
 * starting together do not race) and returns the Store. Throws StorageError (`unavailable`,
 * with the server's own message: authentication failed, database missing, refused) when the
 * database cannot be used.
 */
export async function openPgStore({
  url,
  maxConnections = 10,
  groupCommitMs,
  queryTimeoutMs = DEFAULT_QUERY_TIMEOUT_MS,
  onMigrationLockWait,
}: OpenPgStoreOptions): Promise<Store> {
  const pool = new pg.Pool(poolSettings({ url, maxConnections, queryTimeoutMs }));
  pool.on("error", () => {});
  try {
    await runPgMigrations(pool, { onLockWait: onMigrationLockWait });
  } catch (err) {
    await pool.end().catch(() => {});
    throw translatePgError(err);
  }
  return createPgStore(pool, { groupCommitMs });
}
