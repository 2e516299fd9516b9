import type { Logger } from "pino";
import { buildApp } from "./app.js";
import { composeContext, recoverLeftRuns } from "./compose.js";
import { type Config, ConfigError } from "./config.js";
import { exitWithConfigError } from "./config-exit.js";
import { Deadline } from "./deadline.js";
import { listenForMetrics } from "./http/metrics-server.js";
import { lowOpenFileLimit, readOpenFileLimit } from "./key-limits.js";
import {
  listenProblem,
  makeDatabasePrivate,
  migrationLockWaitMessage,
  openPgStoreOrExplain,
} from "./startup-checks.js";

/** How long past SHUTDOWN_GRACE_MS a shutdown may take: then it exits 1 whatever it still waits for. */
const SHUTDOWN_PAST_GRACE_MS = 2000;
/**
 * How long past SHUTDOWN_GRACE_MS the closing stages (runs stopped late, streams, answers under
 * way, webhook sends, last trace export) may take together: one deadline they share, each
 * waiting at most its own cap and what is left of it. The rest of SHUTDOWN_PAST_GRACE_MS is for
 * giving up leases, closing the database and exiting 0.
 */
const CLOSING_PAST_GRACE_MS = 1500;

/**
 * The server's start once its configuration is valid (see server.ts): database, app, signal
 * handlers, listen, then recovery of the runs a previous process left. SIGTERM/SIGINT
 * (possibly twice) shut down gracefully: stop accepting, stop live runs (left for the next
 * start to resume, or settled `aborted` with ON_RESTART=abort), close streams and the
 * database, exit 0 within SHUTDOWN_GRACE_MS plus SHUTDOWN_PAST_GRACE_MS.
 */
export async function serve({ config, logger }: { config: Config; logger: Logger }): Promise<void> {
  let ctx: ReturnType<typeof composeContext>;
  try {
    // DATABASE_URL set: PostgreSQL (connected and migrated here); otherwise the SQLite file.
    const store = config.DATABASE_URL
      ? await openPgStoreOrExplain(config.DATABASE_URL, {
          groupCommitMs: config.GROUP_COMMIT_MS,
          queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
          onMigrationLockWait: (wait) => logger.warn({ holder: wait.holder }, migrationLockWaitMessage(wait)),
        })
      : undefined;
    ctx = composeContext(config, logger, { store });
  } catch (err) {
    // The database or the workspace root cannot be used: named like a bad value.
    if (err instanceof ConfigError) exitWithConfigError(err);
    throw err;
  }
  if (!config.DATABASE_URL && config.DATABASE_PATH !== ":memory:") makeDatabasePrivate(config.DATABASE_PATH);
  const app = await buildApp(ctx, logger);

  let metricsApp: Awaited<ReturnType<typeof listenForMetrics>> = null;
  let stopping: Promise<void> | null = null;
  const shutdown = (signal: string, exitCode = 0) => {
    if (stopping) return stopping;
    logger.info({ signal }, "shutting down");
    // The last resort: the orderly close below ends well before it.
    const hardStop = setTimeout(() => {
      logger.error("shutdown took too long; exiting");
      process.exit(1);
    }, config.SHUTDOWN_GRACE_MS + SHUTDOWN_PAST_GRACE_MS);
    hardStop.unref();
    const closeBy = Deadline.in(config.SHUTDOWN_GRACE_MS + CLOSING_PAST_GRACE_MS);
    // Over a shared database a proxy's new connections belong to the peers: this instance stops
    // listening at once (a refused connection is retried elsewhere, a 503 to a POST is not) and
    // closes its idle keep-alive connections; requests under way and open streams go on.
    if (config.DATABASE_URL) app.server.close();
    // In this order: the runs' ends are written (and their final events out) before the streams
    // end, and everything is settled before the store closes.
    stopping = (async () => {
      const resume = config.ON_RESTART === "resume";
      await ctx.manager.shutdown({ graceMs: config.SHUTDOWN_GRACE_MS, resume, closeBy });
      await app.closeBy(closeBy);
      await metricsApp?.close();
      await ctx.store.close();
      logger.info("stopped");
      process.exit(exitCode);
    })();
    return stopping;
  };
  // A promise nobody handled is a bug to log, not a reason to drop every live run.
  process.on("unhandledRejection", (err) => logger.error({ err }, "unhandled promise rejection"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  if (ctx.modelProblem) logger.warn({ problem: ctx.modelProblem }, "no model configured: runs will fail until it is");
  // A deep accept queue: many watchers may reconnect at once.
  try {
    await app.listen({ port: config.PORT, host: config.HOST, backlog: 4096 });
    metricsApp = await listenForMetrics(ctx, logger);
    logger.info({ maxConnections: config.MAX_CONNECTIONS || "none" }, "connections the server holds at once");
    const openFileLimit = readOpenFileLimit();
    const needed = lowOpenFileLimit(openFileLimit, config.MAX_CONCURRENT_RUNS);
    if (needed !== null) {
      logger.warn(
        { openFileLimit, needed, maxConcurrentRuns: config.MAX_CONCURRENT_RUNS },
        "the open-file limit (ulimit -n) is low for MAX_CONCURRENT_RUNS runs at once beside the connections: raise it or lower MAX_CONCURRENT_RUNS",
      );
    }
  } catch (err) {
    // listenForMetrics explains its own failures (naming METRICS_PORT).
    const problem =
      err instanceof ConfigError
        ? err.problems.join("; ")
        : listenProblem(err, { host: config.HOST, port: config.PORT });
    if (!problem) throw err;
    process.stderr.write(`${new ConfigError([problem]).message}\n`);
    await shutdown("listen failed", 2);
    return;
  }
  await recoverLeftRuns(ctx);
}
