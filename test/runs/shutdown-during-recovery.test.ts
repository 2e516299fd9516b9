import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { composeContext, recoverLeftRuns } from "../../src/compose.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { runLeftLive } from "../helpers/left-run.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A SIGTERM may arrive while start-up recovery (after listen) is under way. Before, shutdown
 * stopped the runs registered at that moment and a run the recovery resumed a moment later
 * was executed anyway, after the shutdown had finished (and the reaper and webhook sender were
 * started again). Now a run recovered once shutdown began is not executed: it is left for the
 * next start, as a suspended run is.
 */
it("a SIGTERM during start-up recovery leaves no run executing once the shutdown is done", async () => {
  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  // A run left live by a previous process (suspended by its shutdown, as after a crash).
  const { dir, runId } = await runLeftLive(upstream);
  const check = openSqliteStore({ path: join(dir, "agent.db") });
  expect((await check.runs.get(runId))?.status).toBe("running");
  await check.close();

  // The restart, as serve.ts does it, with ON_RESTART=resume.
  const config = loadConfig({
    DATABASE_PATH: join(dir, "agent.db"),
    WORKSPACE_ROOT: join(dir, "workspaces"),
    OPENAI_BASE_URL: upstream.baseURL,
    OPENAI_API_KEY: "sk-test-key",
    OPENAI_MODEL: "fake-model",
    LOG_LEVEL: "silent",
    MODEL_MAX_RETRIES: "0",
  });
  const logger = createLogger({ level: "silent" });
  const ctx = composeContext(config, logger);
  const app = await buildApp(ctx, logger);
  await app.listen({ port: 0, host: "127.0.0.1" });
  upstream.enqueue({ text: "resumed after the shutdown", gate: new Promise(() => {}) });
  const recovery = recoverLeftRuns(ctx);
  // SIGTERM arrives while the recovery is under way.
  const shutdown = ctx.manager.shutdown({ graceMs: 500, resume: true });
  await shutdown;
  await recovery;
  const executingAfterShutdown = ctx.manager.liveCount;
  // Tidy up: stop whatever still executes, then close.
  await ctx.manager.shutdown({ graceMs: 200, resume: true });
  await app.close();
  await ctx.store.close();

  // Left for the next start, as a run the shutdown suspends: still `running`, the model not asked again.
  const after = openSqliteStore({ path: join(dir, "agent.db") });
  const stored = (await after.runs.get(runId))?.status;
  await after.close();
  expect({
    executingAfterShutdown,
    accepting: ctx.manager.accepting,
    stored,
    modelRequests: upstream.requests.length,
  }).toEqual({
    executingAfterShutdown: 0,
    accepting: false,
    stored: "running",
    modelRequests: 1,
  });
});
