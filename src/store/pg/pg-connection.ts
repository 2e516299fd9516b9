import type pg from "pg";

/**
 * How long one statement may wait for its answer by default (DATABASE_QUERY_TIMEOUT_MS). Our
 * statements take milliseconds; the longest legitimate wait is one on a row lock held by a
 * transaction that a lost peer left open, which the server ends after 10 s
 * (`idle_in_transaction_session_timeout`, below). A statement still unanswered at this bound
 * is on a connection that went quiet without being closed (a failover behind a virtual IP, a
 * partition): without it, it would wait until the kernel gives up on the socket (~15 min).
 */
export const DEFAULT_QUERY_TIMEOUT_MS = 30_000;

/**
 * How long a connection may be idle before TCP keepalive probes its peer: an idle connection
 * whose server vanished is found broken and replaced, instead of found so by the next query.
 */
export const KEEPALIVE_IDLE_MS = 10_000;

/** What every connection of this process to PostgreSQL sets, the pool's and the listener's. */
export const keepAliveSettings = { keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS } as const;

/**
 * How long PostgreSQL lets one statement of ours run (`statement_timeout`) under a query
 * timeout: a tenth less, so that a statement the server is still working on (waiting on a
 * lock) is ended, rolled back and answered (57014) by the server before the client gives up.
 */
export const statementTimeoutMs = (queryTimeoutMs: number): number => Math.floor(queryTimeoutMs * 0.9);

/**
 * The pool's settings. PostgreSQL ends a statement that runs past statementTimeoutMs (its
 * transaction rolled back, its connection kept): a statement waiting on a lock does not stay
 * in the server once its client has given up on it, nor carry its write out later. A
 * statement not answered within `queryTimeoutMs` at all (a server or network gone quiet)
 * fails ("Query read timeout"), and since the connections pipeline, node-postgres then
 * destroys the connection (the statements queued behind it fail with it): a connection that
 * went quiet is never handed out again, and the pool opens new ones. Migrations are bound by
 * neither: they run on a client of their own (see runPgMigrations).
 */
export function poolSettings({
  url,
  maxConnections,
  queryTimeoutMs,
}: {
  url: string;
  maxConnections: number;
  queryTimeoutMs: number;
}): pg.PoolConfig {
  return {
    connectionString: url,
    max: maxConnections,
    // Waiting for a free connection, or for a new one to be opened.
    connectionTimeoutMillis: 10_000,
    query_timeout: queryTimeoutMs,
    statement_timeout: statementTimeoutMs(queryTimeoutMs),
    ...keepAliveSettings,
    // A batch is a few statements sent back to back: a transaction left idle this long belongs
    // to a process that was paused or lost mid-batch, and its row locks would hold runs from
    // the reaper. The server ends it (rolled back).
    idle_in_transaction_session_timeout: 10_000,
    // A batch's statements are written at once and answered in order (see runBatch).
    pipeline: true,
  } as pg.PoolConfig;
}
