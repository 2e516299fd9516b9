/**
 * A run's write whose COMMIT the database carried out, but whose connection was then reset
 * (RST: a NAT or firewall dropping its state, a proxy or PgBouncer restarted, the database
 * host rebooting) before the answer came. README (Running several instances): "A run's write
 * that got no answer (timed out, or its connection broke after it was sent) may have been
 * stored all the same: the instance stops executing that run, writes nothing more of it, and
 * the run continues from what is stored once its lease expires".
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { type PgFaultProxy, startPgFaultProxy } from "../helpers/pg-fault-proxy.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let database: TestPgDatabase;
let proxy: PgFaultProxy;
let server: TestServer;
let admin: pg.Client;
const logs = capturedLogs();

beforeAll(async () => {
  database = await createTestPgDatabase();
  proxy = await startPgFaultProxy(database.url);
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  server = await startTestServer({
    pgUrl: proxy.url,
    env: { RUN_LEASE_MS: "1500", ON_RESTART: "resume" },
    logger: logs.logger,
  });
});
afterAll(async () => {
  await server?.close();
  await admin?.end();
  await proxy?.close();
  await database?.drop();
});

it("a run whose committed write lost its answer to a reset connection is continued from what is stored, its events neither lost nor repeated", async () => {
  const hold = gate();
  server.upstream.enqueue({ text: ["MARKER", "-alpha"], gate: hold.wait });
  server.upstream.fallback = () => ({ text: "recovered" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  // The text deltas are written (a background write) while the model's stream waits at the gate:
  // that write's COMMIT is carried out, its answer lost to a reset.
  const reset = proxy.resetAfterCommit(/MARKER/);
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await reset;
  const stored = await admin.query(
    "SELECT count(*)::int AS n FROM run_events WHERE run_id = $1 AND data LIKE '%MARKER%'",
    [run.id],
  );
  expect(stored.rows[0].n).toBeGreaterThan(0);
  hold.open();

  // The run ends (resumed once its lease expired, or ended), in the database.
  const status = async () =>
    (await admin.query("SELECT status FROM runs WHERE id = $1", [run.id])).rows[0]?.status as string;
  let last = "";
  try {
    await until(
      status,
      (s) => {
        last = s;
        return s === "finished";
      },
      "the run to be finished in the database",
    );
  } catch {
    // Reported below with what the database holds.
  }
  // What kept it from ending, if anything: the log's warnings and errors.
  const complaints = logs.lines
    .map((line) => JSON.parse(line))
    .filter((entry) => entry.level >= 40)
    .map((entry) => `${entry.msg}: ${entry.err?.message ?? ""}`);
  expect(last, `the run's status in the database; the log said ${JSON.stringify([...new Set(complaints)])}`).toBe(
    "finished",
  );
  const events = (
    await admin.query<{ seq: number; type: string }>(
      "SELECT seq, type FROM run_events WHERE run_id = $1 ORDER BY seq",
      [run.id],
    )
  ).rows;
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.filter((e) => e.type === "run.finished")).toHaveLength(1);
  // The session takes a new run.
  server.upstream.fallback = () => ({ text: "next" });
  const next = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "again" } });
  expect(next.status).toBe(201);
}, 30_000);

it("a session whose insert was committed, its answer lost to a reset connection, keeps its workspace", async () => {
  const reset = proxy.resetAfterCommit(/INSERT INTO sessions/);
  const created = server.request("POST", "/sessions", { body: { metadata: { mark: "reset-create" } } });
  await reset;
  const answer = await created;
  const stored = (
    await admin.query<{ id: string; workspace: string }>(
      "SELECT id, workspace FROM sessions WHERE metadata LIKE '%reset-create%'",
    )
  ).rows;
  expect(stored).toHaveLength(1);
  const [row] = stored as [{ id: string; workspace: string }];
  expect(existsSync(join(server.dir, "workspaces", row.workspace)), `answered ${answer.status}`).toBe(true);
  // Told so, or told to retry: never told it does not exist while it does.
  if (answer.status === 201) expect(answer.body.id).toBe(row.id);
  else expect(answer.status).toBe(503);
  expect((await server.request("GET", `/sessions/${row.id}`)).status).toBe(200);
}, 30_000);
