/**
 * With PostgreSQL unreachable, a read (`GET /sessions`, `GET /sessions/{id}`, `GET /runs/{id}`)
 * is answered `503 STORAGE_UNAVAILABLE` with `Retry-After`, which the spec documents for each
 * of those routes (StorageUnavailable, beside TOO_MANY_CONNECTIONS).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let database: TestPgDatabase;
let proxy: TcpProxy;
let server: TestServer;
beforeAll(async () => {
  database = await createTestPgDatabase();
  const url = new URL(database.url);
  proxy = await startTcpProxy(`${url.searchParams.get("host")}/.s.PGSQL.5432`);
  const viaProxy = `postgres://${url.username}@127.0.0.1:${new URL(proxy.url).port}${url.pathname}`;
  server = await startTestServer({ backend: "postgres", pgUrl: viaProxy, env: { DATABASE_QUERY_TIMEOUT_MS: "2000" } });
});
afterAll(async () => {
  await proxy.comeBack().catch(() => {});
  await server?.close().catch(() => {});
  await proxy?.close();
  await database?.drop();
});

it("GET routes answer a database outage with a status and body their spec documents", async () => {
  const session = await server.request("POST", "/sessions", { body: {} });
  expect(session.status).toBe(201);
  await proxy.goDown();
  const problems: string[] = [];
  try {
    for (const [path, template] of [
      ["/sessions", "/sessions"],
      [`/sessions/${session.body.id}`, "/sessions/{id}"],
      ["/runs/run_01abc", "/runs/{id}"],
    ] as const) {
      const res = await fetch(`${server.url}${path}`);
      const body = await res.json();
      try {
        validateResponse({
          method: "GET",
          path: template,
          status: res.status,
          body,
          contentType: res.headers.get("content-type"),
          headers: res.headers,
        });
      } catch (err) {
        problems.push(`${res.status} ${body?.error?.code}: ${(err as Error).message.split("\n")[0]}`);
      }
    }
  } finally {
    await proxy.comeBack();
  }
  expect(problems).toEqual([]);
});
