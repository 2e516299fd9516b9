/**
 * A statement unanswered past DATABASE_QUERY_TIMEOUT_MS has its connection destroyed and the
 * pool opens another (README, Running several instances). A statement waiting on a lock (a
 * long maintenance transaction, a newer release's migration rewriting a table during a rolling
 * upgrade) does not notice its client went away: its backend stays in the database, waiting,
 * and carries the write out once the lock is released. Each timeout then leaves one more
 * backend behind, until the database's max_connections is spent for every client.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { tempDir } from "../helpers/temp-dir.js";

let upstream: FakeUpstream;
let database: TestPgDatabase;
let server: ChildServer;
let admin: pg.Client;
let locker: pg.Client;
const dir = tempDir("rv-pgf-orphans-");

beforeAll(async () => {
  upstream = await startFakeUpstream();
  database = await createTestPgDatabase();
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  locker = new pg.Client({ connectionString: database.url });
  await locker.connect();
  server = await startChildServer({
    dir: dir.path,
    upstreamURL: upstream.baseURL,
    env: { DATABASE_URL: database.url, DATABASE_QUERY_TIMEOUT_MS: "1000", SHELL_SANDBOX: "off" },
  });
});
afterAll(async () => {
  await locker?.query("ROLLBACK").catch(() => {});
  await locker?.end().catch(() => {});
  if (server?.process.exitCode === null && server.process.signalCode === null) server.process.kill("SIGKILL");
  await server?.exited;
  await admin?.end().catch(() => {});
  await database?.drop();
  await upstream?.close();
  dir.cleanup();
});

/** The backends of the database other than the test's own two connections. */
async function serverBackends(): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> $1",
    [(locker as unknown as { processID: number }).processID],
  );
  return rows[0]?.n ?? 0;
}

it("statements that time out waiting on a lock leave no more backends in the database than the instance's pool holds", async () => {
  // A long transaction holds the sessions table (a migration, a maintenance statement).
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE");
  // Clients keep trying, as they do through an outage: each wave's inserts wait on the lock past the timeout.
  for (let wave = 0; wave < 3; wave++) {
    const statuses = await Promise.all(
      Array.from({ length: 10 }, () =>
        fetch(`${server.url}/sessions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        }).then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        }),
      ),
    );
    expect(statuses.every((status) => status === 503)).toBe(true);
  }
  // The pool holds at most 10 connections, and the instance one listening connection.
  const { rows: kinds } = await admin.query(
    `SELECT state, wait_event_type, count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> $1 GROUP BY 1, 2`,
    [(locker as unknown as { processID: number }).processID],
  );
  expect(await serverBackends(), `the instance's backends: ${JSON.stringify(kinds)}`).toBeLessThanOrEqual(11);
}, 60_000);
