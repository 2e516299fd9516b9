/**
 * README (Durability): a run whose end cannot be stored "ends error (PERSISTENCE_FAILED) within
 * a few seconds even while storage keeps failing ...: its end is reported (`?wait=true`
 * answers ...) and written as soon as the database takes writes again". Over PostgreSQL a
 * write outage may outlast the run's lease (here the database turned read-only, as a demoted
 * primary after a failover is). The end stored must still be the one reported to the client,
 * not a second one from a reaper that took the run over from what is stored and ran it again:
 * the instance that reported it stores it, its write fenced by the run's lease epoch (no other
 * instance claimed the run meanwhile).
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let database: TestPgDatabase;
let server: TestServer;
let admin: pg.Client;
let dbName: string;
const logs = capturedLogs();

/** Ends every connection of the server to the database: its pool reconnects with the database's settings of now. */
const reconnectServer = () =>
  admin.query(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
  );

beforeAll(async () => {
  database = await createTestPgDatabase();
  dbName = new URL(database.url).pathname.slice(1);
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  server = await startTestServer({
    pgUrl: database.url,
    env: { RUN_LEASE_MS: "2000", ON_RESTART: "resume" },
    finishReportMs: 300,
    logger: logs.logger,
  });
});
afterAll(async () => {
  await admin?.query(`ALTER DATABASE ${dbName} RESET default_transaction_read_only`).catch(() => {});
  await server?.close().catch(() => {});
  await admin?.end();
  await database?.drop();
});

it("the end reported to a ?wait=true start while the database took no writes is the end stored once it does", async () => {
  const hold = gate();
  server.upstream.enqueue({ text: ["the ", "answer"], gate: hold.wait });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const waited = server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
  await until(
    () => server.upstream.requests.length,
    (n) => n === 1,
    "the model request",
  );
  const runId = (await admin.query("SELECT id FROM runs WHERE session_id = $1", [session.id])).rows[0].id as string;
  const watcher = await openSse(`${server.url}/runs/${runId}/events`);
  const text = () =>
    watcher.events
      .filter((e) => e.event === "text.delta")
      .map((e) => e.json.text)
      .join("");
  await watcher.waitFor(() => text() === "the answer");
  watcher.close();

  // The database turns read-only: reads work, writes (and lease renewals) are refused.
  await admin.query(`ALTER DATABASE ${dbName} SET default_transaction_read_only = on`);
  await reconnectServer();
  hold.open();
  const reported = await waited;
  expect(reported.status, JSON.stringify(reported.body)).toBe(200);
  expect(reported.body.run).toMatchObject({ id: runId, status: "finished", stopReason: "error" });
  // The write outage outlasts the lease: any instance's reaper may claim the run by now.
  await until(
    async () =>
      (
        await admin.query(
          "SELECT lease_expires_at < extract(epoch FROM clock_timestamp()) * 1000 AS lapsed FROM runs WHERE id = $1",
          [runId],
        )
      ).rows[0]?.lapsed === true,
    (lapsed) => lapsed,
    "the run's lease to lapse in the database",
  );
  server.upstream.fallback = () => ({ text: "a second answer" });
  await admin.query(`ALTER DATABASE ${dbName} RESET default_transaction_read_only`);
  await reconnectServer();
  // This instance's own reaper pass, once writes work, before the end's next retry: it claims
  // no run whose end it reported (it did, stopping the run and running it again: "complete").
  await server.ctx.manager.ownership.reap();

  const stored = await until(
    async () => (await admin.query("SELECT status, stop_reason FROM runs WHERE id = $1", [runId])).rows[0],
    (row) => row.status === "finished",
    "the run's end to be stored",
  );
  expect(stored.stop_reason, "the stored end is the one reported to the waiter").toBe("error");
  const ends = await admin.query(
    "SELECT count(*)::int AS n FROM run_events WHERE run_id = $1 AND type = 'run.finished'",
    [runId],
  );
  expect(ends.rows[0].n).toBe(1);
  // GET /runs/{id} agrees with what the waiter was told.
  expect((await server.request("GET", `/runs/${runId}`)).body.stopReason).toBe("error");
}, 30_000);
