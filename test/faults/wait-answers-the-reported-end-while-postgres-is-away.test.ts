/**
 * README (Durability): a run whose end cannot be stored "ends error (PERSISTENCE_FAILED) within
 * a few seconds even while storage keeps failing ...: its end is reported (`?wait=true`
 * answers, ...)". Over PostgreSQL gone away, the end is decided and reported, but the
 * `?wait=true` start that waited for it was answered 503 STORAGE_UNAVAILABLE ("retry later":
 * a retry without an Idempotency-Key starts a second run), the run's end not in it.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let database: TestPgDatabase;
let proxy: TcpProxy;
let server: TestServer;

beforeAll(async () => {
  database = await createTestPgDatabase();
  const url = new URL(database.url);
  proxy = await startTcpProxy(`${url.searchParams.get("host")}/.s.PGSQL.5432`);
  const viaProxy = `postgres://${url.username}@127.0.0.1:${new URL(proxy.url).port}${url.pathname}`;
  server = await startTestServer({ pgUrl: viaProxy, finishReportMs: 300 });
});
afterAll(async () => {
  await proxy?.comeBack().catch(() => {});
  await server?.close().catch(() => {});
  await proxy?.close();
  await database?.drop();
});

it("a ?wait=true start whose run ends while PostgreSQL is unreachable is answered the run's reported end", async () => {
  const hold = gate();
  server.upstream.enqueue({ text: ["the ", "answer"], gate: hold.wait });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const waited = server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
  await until(
    () => server.upstream.requests.length,
    (n) => n === 1,
    "the model request",
  );
  const runId = ((await server.request("GET", `/sessions/${session.id}/runs`)).body.items[0]?.id ?? "") as string;
  // Everything written before the model's reply ends is stored (its text seen on a stream): no write in flight.
  const watcher = await openSse(`${server.url}/runs/${runId}/events`);
  const text = () =>
    watcher.events
      .filter((e) => e.event === "text.delta")
      .map((e) => e.json.text)
      .join("");
  await watcher.waitFor(() => text() === "the answer");
  watcher.close();

  await proxy.goDown();
  try {
    // Once the server has seen its connections go (its readiness probe fails), the run's last
    // write finds none open: a certain failure. A write sent on a connection the proxy is just
    // closing may have been stored (an unknown outcome: the run is left for its takeover instead).
    await until(
      async () => (await fetch(`${server.url}/readyz`)).status,
      (status) => status === 503,
      "the server to see PostgreSQL gone",
    );
    hold.open();
    const answer = await waited;
    expect(answer.headers.get("location")).toBe(`/runs/${runId}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.run).toMatchObject({ id: runId, status: "finished", stopReason: "error" });
    expect(answer.body.run.error.code).toBe("PERSISTENCE_FAILED");
  } finally {
    await proxy.comeBack();
  }
}, 30_000);
