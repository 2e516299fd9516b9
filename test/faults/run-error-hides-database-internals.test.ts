/**
 * A run's `error` and `stopDetail` reach every API client of the run (GET /runs/{id}, the
 * `run.finished` event, webhooks, the chat stream): when the database fails the run, they name
 * the kind of failure and what to do about it, never the database's own text, address, tables
 * or SQL. The server log has the failure itself, at error level, with the run's id.
 *
 * Over PostgreSQL: the server's role loses its INSERT privilege on `messages` mid-run (an
 * operator's or a migration's mistake), and the database goes away mid-run (a proxy taken
 * down). Before, the run showed "could not save the run's progress: permission denied for table
 * messages" and "... connect ECONNREFUSED 127.0.0.1:<port>".
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const role = `agent_rv_${randomBytes(4).toString("hex")}`;
let database: TestPgDatabase;
let server: TestServer;
const logs = capturedLogs();

/** The log lines at error level (pino's 50) that carry `runId`. */
const errorsOf = (lines: string[], runId: string) =>
  lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 50 && entry.runId === runId);

/** Runs statements as the cluster's superuser, on `url`. */
async function asAdmin(url: string, ...sql: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const statement of sql) await client.query(statement);
  } finally {
    await client.end();
  }
}

/** `url` with another user name. */
function asUser(url: string, user: string): string {
  const parsed = new URL(url.replace(/^postgres(ql)?:/, "http:"));
  parsed.username = user;
  return parsed.toString().replace(/^http:/, "postgres:");
}

beforeAll(async () => {
  database = await createTestPgDatabase();
  await asAdmin(inject("pgServerUrl"), `CREATE ROLE ${role} LOGIN`);
  await asAdmin(
    database.url,
    `GRANT ALL ON SCHEMA public TO ${role}`,
    `GRANT ALL ON ALL TABLES IN SCHEMA public TO ${role}`,
    `GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${role}`,
  );
  server = await startTestServer({ pgUrl: asUser(database.url, role), logger: logs.logger });
});
afterAll(async () => {
  await server?.close();
  await database?.drop();
  await asAdmin(inject("pgServerUrl"), `DROP ROLE IF EXISTS ${role}`);
});

it("a run whose write the database refused ends with an error that names no table nor driver text", async () => {
  const hold = gate();
  server.upstream.enqueue({ text: ["the ", "answer"], gate: hold.wait });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await until(
    () => server.upstream.requests.length,
    (n) => n === 1,
    "the model request",
  );
  await asAdmin(database.url, `REVOKE INSERT ON messages FROM ${role}`);
  hold.open();

  const ended = await finishedRun(server, run.id);
  expect(ended.stopReason).toBe("error");
  const shown = JSON.stringify({ error: ended.error, stopDetail: ended.stopDetail });
  expect(shown).not.toMatch(/permission denied|for table|messages\b/i);
  expect(ended.error).toEqual({
    code: "PERSISTENCE_FAILED",
    message: "could not save the run's progress: the database refused the server's access (permissions)",
  });
  expect(ended.stopDetail).toMatch(/; check the server's database role: its credentials and its privileges/);
  const logged = JSON.stringify(errorsOf(logs.lines, run.id));
  expect(logged).toContain("permission denied for table messages");
});

it("a run whose database went away mid-run ends with an error that names no database host nor port", async () => {
  const proxied = await createTestPgDatabase();
  const url = new URL(proxied.url);
  const proxy = await startTcpProxy(`${url.searchParams.get("host")}/.s.PGSQL.5432`);
  const port = new URL(proxy.url).port;
  const viaProxy = `postgres://${url.username}@127.0.0.1:${port}${url.pathname}`;
  const otherLogs = capturedLogs();
  const other = await startTestServer({ pgUrl: viaProxy, logger: otherLogs.logger });
  const hold = gate();
  let down = false;
  try {
    other.upstream.enqueue({ text: ["the ", "answer"], gate: hold.wait });
    const session = (await other.request("POST", "/sessions", { body: {} })).body;
    const run = (await other.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
    // Everything the run writes before the model's reply ends (its turn start and the reply's
    // text, sent before the gate) is stored, as its events seen say: no write is in flight.
    const watcher = await openSse(`${other.url}/runs/${run.id}/events`);
    const text = () =>
      watcher.events
        .filter((e) => e.event === "text.delta")
        .map((e) => e.json.text)
        .join("");
    await watcher.waitFor(() => text() === "the answer");
    watcher.close();
    await proxy.goDown();
    down = true;
    // Every pooled connection seen broken: a read now needs a new one, which is refused.
    await until(
      async () => {
        await other.request("GET", `/sessions/${session.id}`);
        return otherLogs.lines.some((line) => line.includes("ECONNREFUSED"));
      },
      (refused) => refused,
      "a new connection to be refused",
    );
    hold.open();
    // The run ends while the database is away (its end is reported, and stored once it is back).
    await until(
      () => otherLogs.lines.some((line) => line.includes("run ended with an error")),
      (ended) => ended,
      "the run to end while the database is away",
    );
    down = false;
    await proxy.comeBack();
    const ended = await finishedRun(other, run.id);
    expect(ended.stopReason).toBe("error");
    const shown = JSON.stringify({ error: ended.error, stopDetail: ended.stopDetail });
    expect(shown).not.toContain(`127.0.0.1:${port}`);
    expect(shown).not.toMatch(/ECONNREFUSED|connect /);
    expect(ended.error?.message).toBe("could not save the run's progress: the database could not be reached");
    expect(ended.stopDetail).toMatch(/; check that the database is up and reachable from the server/);
    expect(JSON.stringify(errorsOf(otherLogs.lines, run.id))).toContain(`127.0.0.1:${port}`);
  } finally {
    hold.open();
    if (down) await proxy.comeBack();
    await other.close();
    await proxy.close();
    await proxied.drop();
  }
});
