/**
 * agent_runs_finished_total counts "runs ended, counted when their end is committed" (README,
 * Observability), each run once, on the instance that stored its end. A run whose end write was
 * carried out by PostgreSQL but whose answer was lost (the connection reset after COMMIT: a NAT
 * dropping its state, a PgBouncer restart) is finished in the database (GET /runs/{id} says so,
 * its run.finished is stored and streamed) yet is counted finished by no instance: the observer
 * takes a write without an answer as `error` ("not known what was stored") and digests nothing
 * of it, the instance gives the run up, and no peer ever recovers a run that is already finished.
 * agent_runs_started_total says 1 and agent_runs_finished_total 0 for good: a run that looks
 * in flight forever to anyone computing started - finished, and its end's stop reason is never
 * seen. Expected: once the server knows the run's end is stored (it reads it back, as its
 * waiters do), the run is counted finished once.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { type PgFaultProxy, startPgFaultProxy } from "../helpers/pg-fault-proxy.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let database: TestPgDatabase;
let proxy: PgFaultProxy;
let server: TestServer;
let admin: pg.Client;

beforeAll(async () => {
  database = await createTestPgDatabase();
  proxy = await startPgFaultProxy(database.url);
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  server = await startTestServer({ pgUrl: proxy.url, env: { RUN_LEASE_MS: "1500" } });
});
afterAll(async () => {
  await server?.close();
  await admin?.end();
  await proxy?.close();
  await database?.drop();
});

it("a run whose end was stored, its answer lost to a reset connection, is counted finished once", async () => {
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  // The final reply and the run's end are one write: its COMMIT is carried out, its answer lost.
  const reset = proxy.resetAfterCommit(/run\.finished/);
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await reset;
  const stored = await admin.query("SELECT status, stop_reason FROM runs WHERE id = $1", [run.id]);
  expect(stored.rows[0]).toEqual({ status: "finished", stop_reason: "complete" });

  // The server says so too, and no longer executes it.
  const finished = await until(
    async () => (await server.request("GET", `/runs/${run.id}`)).body,
    (r) => r.status === "finished",
    "the run to read finished",
  );
  expect(finished.stopReason).toBe("complete");
  await until(
    () => server.ctx.manager.executes(run.id),
    (executes) => !executes,
    "the run to be no longer executed here",
  );

  // Started once, ended once: it is counted finished (polled: the end may be read back later).
  const counted = async () =>
    new Exposition((await server.ctx.metrics.exposition()).text).value("agent_runs_finished_total", {
      status: "finished",
      stop_reason: "complete",
    });
  const metrics = new Exposition((await server.ctx.metrics.exposition()).text);
  expect(metrics.value("agent_runs_started_total")).toBe(1);
  await expect.poll(counted, { timeout: 10_000, interval: 100 }).toBe(1);
}, 30_000);
