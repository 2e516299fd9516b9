import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { capturedLogs } from "../helpers/captured-logs.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/**
 * The SQLite file deleted (or replaced) under a running server: SQLite goes on writing to the
 * open file no path names any more, lost at the next start. Readiness says so; writes go on.
 */
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const fileProblemLogs = (lines: string[]) =>
  lines.filter((line) => line.includes("the database file is no longer where it was opened"));

it("the database's files deleted: /readyz 503 naming the file, the error logged once, writes still answered", async () => {
  const logs = capturedLogs();
  server = await startTestServer({ logger: logs.logger });
  expect((await server.request("POST", "/sessions", { body: {} })).status).toBe(201);
  expect((await server.request("GET", "/readyz")).status).toBe(200);
  // rm agent.db* (the lock file, the WAL and the shared memory too).
  for (const suffix of ["", "-wal", "-shm", "-lock"]) rmSync(join(server.dir, `agent.db${suffix}`), { force: true });

  const ready = await server.request("GET", "/readyz");
  expect(ready.status).toBe(503);
  expect(ready.body.checks.database).toEqual({
    ok: false,
    message: expect.stringMatching(/^the database file .*agent\.db was deleted while the server runs: /),
  });
  expect((await server.request("POST", "/sessions", { body: {} })).status).toBe(201);
  expect((await server.request("GET", "/readyz")).status).toBe(503);
  expect(fileProblemLogs(logs.lines)).toHaveLength(1);
  expect(JSON.parse(fileProblemLogs(logs.lines)[0] as string).level).toBe(50);
});

it("the lock file alone deleted: /readyz 503 saying another server could start on the database", async () => {
  server = await startTestServer();
  rmSync(join(server.dir, "agent.db-lock"));
  const ready = await server.request("GET", "/readyz");
  expect(ready.status).toBe(503);
  expect(ready.body.checks.database.message).toMatch(
    /^the lock file .*agent\.db-lock was deleted .*another server could start/,
  );
});

it("the database file replaced by another: /readyz 503 saying so", async () => {
  server = await startTestServer();
  const path = join(server.dir, "agent.db");
  renameSync(path, `${path}.moved`);
  writeFileSync(path, "");
  const ready = await server.request("GET", "/readyz");
  expect(ready.status).toBe(503);
  expect(ready.body.checks.database.message).toMatch(/agent\.db was replaced by another file/);
});
