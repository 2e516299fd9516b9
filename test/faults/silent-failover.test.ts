import { afterAll, beforeAll, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * A silent PostgreSQL failover: the connections the instance holds go quiet without being
 * closed (no FIN, no RST), new ones work. Statements in flight used to wait on them until
 * the kernel gave up (~15 min): every request answered 503 after ~13 s and /readyz not at all.
 */
const QUERY_TIMEOUT_MS = 2_000;

let upstream: FakeUpstream;
let database: TestPgDatabase;
let proxy: TcpProxy;
let server: ChildServer;
const dir = tempDir("silent-failover-");

beforeAll(async () => {
  upstream = await startFakeUpstream();
  database = await createTestPgDatabase();
  // The suite's cluster listens on a Unix socket: the instance reaches it over TCP, through the proxy.
  const url = new URL(database.url);
  proxy = await startTcpProxy(`${url.searchParams.get("host")}/.s.PGSQL.5432`);
  const viaProxy = `postgres://${url.username}@127.0.0.1:${new URL(proxy.url).port}${url.pathname}`;
  server = await startChildServer({
    dir: dir.path,
    upstreamURL: upstream.baseURL,
    env: { DATABASE_URL: viaProxy, DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS), SHELL_SANDBOX: "off" },
  });
});
afterAll(async () => {
  if (server?.process.exitCode === null && server.process.signalCode === null) server.process.kill("SIGKILL");
  await server?.exited;
  await proxy?.close();
  await database?.drop();
  await upstream?.close();
  dir.cleanup();
});

/** A request's status and how long it took to answer ("none" when it had not answered within `limitMs`). */
async function timed(path: string, init: RequestInit, limitMs: number) {
  const started = performance.now();
  const status = await fetch(`${server.url}${path}`, { ...init, signal: AbortSignal.timeout(limitMs) })
    .then(async (res) => {
      await res.arrayBuffer();
      return res.status;
    })
    .catch(() => "none" as const);
  return { status, ms: performance.now() - started };
}
const newSession = (limitMs: number) =>
  timed("/sessions", { method: "POST", body: "{}", headers: { "content-type": "application/json" } }, limitMs);

it("after the database's connections go quiet, /readyz answers promptly and requests succeed again within the query timeout", async () => {
  // Every pooled connection opened, and busy when the failover comes.
  await Promise.all(Array.from({ length: 30 }, () => newSession(5_000)));
  let loading = true;
  const load = Promise.all(
    Array.from({ length: 20 }, async () => {
      while (loading) await newSession(30_000);
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  proxy.blackhole();
  const failedOverAt = performance.now();
  loading = false;

  // While the pool's connections are stuck: an answer (503), not a hang.
  const ready = await timed("/readyz", {}, 6_000);
  expect(ready.status).not.toBe("none");
  expect(ready.ms).toBeLessThan(3_500);

  // The stuck connections are destroyed at the query timeout and replaced: a request succeeds.
  let created: Awaited<ReturnType<typeof newSession>> | null = null;
  while (performance.now() - failedOverAt < QUERY_TIMEOUT_MS + 8_000) {
    created = await newSession(12_000);
    if (created.status === 201) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(created?.status).toBe(201);
  expect(performance.now() - failedOverAt).toBeLessThan(QUERY_TIMEOUT_MS + 6_000);
  // And the instance is ready again, and stays up (a connection that broke while checked out
  // does not crash the process).
  expect((await timed("/readyz", {}, 5_000)).status).toBe(200);
  await load;
  expect(server.process.exitCode).toBeNull();
  expect(server.output()).not.toMatch(/uncaught/i);
}, 40_000);
