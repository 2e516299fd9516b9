import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import type { ComposeOptions } from "../../src/compose.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { type ChildServer, startChildServer } from "./child-server.js";
import { createTestPgDatabase, type TestPgDatabase } from "./pg-database.js";
import type { BackendName } from "./store-backends.js";
import { tempDir } from "./temp-dir.js";
import { startTestServer, type TestServer } from "./test-server.js";

export interface CrashHarness {
  /** The file's fake model, shared by every server of every test. */
  readonly upstream: FakeUpstream;
  /** The test's data directory (database file, workspaces), kept across kills and restarts. */
  readonly dir: string;
  /** The test's PostgreSQL database when the test runs on postgres. */
  readonly database: TestPgDatabase | null;
  /** A fresh data directory, and a fresh database on postgres, for the test about to run. */
  prepare(backend: BackendName, prefix?: string): Promise<void>;
  /** The built server as a process of its own, over the test's data (to be killed). */
  start(env?: Record<string, string>): Promise<ChildServer>;
  /**
   * The server restarted over the killed one's data, in this process: the same start as the
   * built server's (configuration, store, app, listen, then the recovery of what was left),
   * without a process's start. Resolves once the recovery is done.
   */
  restart(
    options?: { env?: Record<string, string>; port?: number } & Pick<ComposeOptions, "wrapStore">,
  ): Promise<TestServer>;
  /** SIGKILL, and the process is seen to die of it. */
  kill(child: ChildServer): Promise<void>;
  /** The test's database, opened beside its server (as a second connection). */
  openStore(): Promise<Store>;
}

/**
 * The kill -9 tests' fixture: registers the file's hooks (the upstream for the file; after each
 * test, restarted servers closed, children killed and reaped, data and database removed).
 * Every server of a test shares `instanceId` over PostgreSQL, as a restarted container would,
 * so a restart takes its own runs back at once (another id waits for their leases to expire).
 */
export function crashHarness({ instanceId }: { instanceId: string }): CrashHarness {
  let upstream: FakeUpstream | null = null;
  let dir: ReturnType<typeof tempDir> | null = null;
  let database: TestPgDatabase | null = null;
  const children: ChildServer[] = [];
  const restarted: TestServer[] = [];

  beforeAll(async () => {
    upstream = await startFakeUpstream();
  });
  afterAll(async () => {
    await upstream?.close();
  });
  afterEach(async () => {
    for (const server of restarted.splice(0)) await server.close({ keepDir: true });
    for (const child of children.splice(0)) {
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
      await child.exited;
    }
    dir?.cleanup();
    dir = null;
    await database?.drop();
    database = null;
  });

  const need = <T>(value: T | null, what: string): T => {
    if (value === null) throw new Error(`crash harness: no ${what} (call prepare() first)`);
    return value;
  };
  const shared = (): Record<string, string> => (database ? { INSTANCE_ID: instanceId } : {});

  return {
    get upstream() {
      return need(upstream, "upstream");
    },
    get dir() {
      return need(dir, "data directory").path;
    },
    get database() {
      return database;
    },
    async prepare(backend, prefix) {
      // A test that failed (timed out, say) may have left scripted replies: they are not the next test's.
      this.upstream.discard();
      dir = tempDir(prefix);
      if (backend === "postgres") database = await createTestPgDatabase();
    },
    async start(env = {}) {
      const child = await startChildServer({
        dir: this.dir,
        upstreamURL: this.upstream.baseURL,
        env: { ...(database ? { DATABASE_URL: database.url } : {}), ...shared(), ...env },
      });
      children.push(child);
      return child;
    },
    async restart({ env = {}, port, wrapStore } = {}) {
      const server = await startTestServer({
        dir: this.dir,
        upstream: this.upstream,
        env: { ...shared(), ...env },
        ...(port === undefined ? {} : { port }),
        ...(wrapStore ? { wrapStore } : {}),
        ...(database ? { pgUrl: database.url } : {}),
      });
      restarted.push(server);
      return server;
    },
    async kill(child) {
      child.process.kill("SIGKILL");
      expect(await child.exited).toBe("SIGKILL");
    },
    async openStore() {
      return database
        ? openPgStore({ url: database.url, maxConnections: 2 })
        : openSqliteStore({ path: join(this.dir, "agent.db") });
    },
  };
}
