import { join } from "node:path";
import type { Logger } from "pino";
import { buildApp } from "../../src/app.js";
import type { App, AppContext } from "../../src/app-context.js";
import { type ComposeOptions, composeContext, recoverLeftRuns } from "../../src/compose.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { removeAfterFile } from "./leftovers.js";
import { createTestPgDatabase } from "./pg-database.js";
import type { BackendName } from "./store-backends.js";
import { tempDir } from "./temp-dir.js";

export interface TestServer {
  url: string;
  app: App;
  ctx: AppContext;
  upstream: FakeUpstream;
  dir: string;
  /** JSON request helper: returns status, headers and parsed body. */
  request(
    method: string,
    path: string,
    options?: { body?: unknown; headers?: Record<string, string> },
    // biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected freely by tests.
  ): Promise<{ status: number; headers: Headers; body: any }>;
  /**
   * Stops the server (runs are cancelled first, or with `resume` left for a restart to resume,
   * as SIGTERM does); keeps the temp dir when `keepDir`.
   */
  close(options?: { keepDir?: boolean; resume?: boolean }): Promise<void>;
}

/**
 * A real server on a real socket, with a temp SQLite file and workspace root, its
 * model the fake upstream over HTTP. `env` overrides configuration variables;
 * `dir` reuses a data directory (to restart over the same database).
 */
export async function startTestServer({
  env = {},
  dir: reuseDir,
  upstream: givenUpstream,
  sseHeartbeatMs,
  logger: givenLogger,
  wrapStore,
  finishReportMs,
  port = 0,
  backend = "sqlite",
  pgUrl,
}: {
  env?: Record<string, string>;
  dir?: string;
  upstream?: FakeUpstream;
  sseHeartbeatMs?: number;
  /** Where the server logs (default: the configured LOG_LEVEL on standard output). */
  logger?: Logger;
  /** The port to listen on (default: any free one); a restart on the same port keeps clients' URLs. */
  port?: number;
  /** The store: the SQLite file in the temp dir (default), or a fresh PostgreSQL database dropped at close. */
  backend?: BackendName;
  /** A PostgreSQL database the caller made (several instances over one), kept at close. */
  pgUrl?: string;
} & Pick<ComposeOptions, "wrapStore" | "finishReportMs"> = {}): Promise<TestServer> {
  const temp = reuseDir ? { path: reuseDir, cleanup: () => {} } : tempDir("agent-server-");
  // A directory kept at close (for a restart on it) goes at the end of the file.
  if (!reuseDir) removeAfterFile(temp.path);
  const upstream = givenUpstream ?? (await startFakeUpstream());
  const config = loadConfig({
    DATABASE_PATH: join(temp.path, "agent.db"),
    WORKSPACE_ROOT: join(temp.path, "workspaces"),
    OPENAI_BASE_URL: upstream.baseURL,
    OPENAI_API_KEY: "sk-test-key",
    OPENAI_MODEL: "fake-model",
    LOG_LEVEL: "silent",
    MODEL_MAX_RETRIES: "0",
    ...env,
  });
  const logger = givenLogger ?? createLogger({ level: config.LOG_LEVEL });
  const database = backend === "postgres" && !pgUrl ? await createTestPgDatabase() : null;
  const storeUrl = pgUrl ?? database?.url;
  const store = storeUrl ? await openPgStore({ url: storeUrl }) : undefined;
  const ctx = composeContext(config, logger, { sseHeartbeatMs, wrapStore, finishReportMs, store });
  const app = await buildApp(ctx, logger);
  await app.listen({ port, host: "127.0.0.1" });
  await recoverLeftRuns(ctx);
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    url,
    app,
    ctx,
    upstream,
    dir: temp.path,
    async request(method, path, { body, headers = {} } = {}) {
      const res = await fetch(url + path, {
        method,
        headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        // Not JSON: returned as text.
      }
      return { status: res.status, headers: res.headers, body: parsed };
    },
    async close({ keepDir = false, resume = false } = {}) {
      await ctx.manager.shutdown({ graceMs: 2000, resume });
      await app.close();
      await ctx.store.close();
      await database?.drop();
      if (!givenUpstream) await upstream.close();
      if (!keepDir) temp.cleanup();
    },
  };
}
