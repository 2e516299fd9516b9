/**
 * /readyz needs no credentials, also with AGENT_API_KEYS set (load balancers call it), so what
 * it says is said to anyone who reaches the port. It answered everyone with each failing
 * check's message (the database file's absolute path once the file or its lock file was
 * deleted or replaced, a database's own error text) and `shell` (whether commands run
 * unsandboxed, and why). Now, keys being set, a caller without a valid key gets ready / not
 * ready and each check's `ok`; a valid key gets the messages and `shell`, as does every caller
 * of a server without keys (loopback by default, see README).
 */
import { rmSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY = "reviewer-key-0123456789abcdef";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const CHECKS = ["accepting", "database", "workspaces", "model"];

let server: TestServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

it("keys set: without a valid key, a failing /readyz says which check failed and nothing of why", async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: KEY } });
  expect((await server.request("GET", "/sessions")).status).toBe(401);
  const ready = await server.request("GET", "/readyz");
  expect(ready.status).toBe(200);
  expect(ready.body).toEqual({
    ready: true,
    checks: { accepting: { ok: true }, database: { ok: true }, workspaces: { ok: true }, model: { ok: true } },
  });
  // The lock file deleted under the server (an operator "cleaning a stale lock file").
  rmSync(join(server.dir, "agent.db-lock"));
  for (const headers of [{}, as("not-a-valid-key-at-all")]) {
    const anonymous = await server.request("GET", "/readyz", { headers });
    expect(anonymous.status).toBe(503);
    expect(anonymous.body).toEqual({
      ready: false,
      checks: { accepting: { ok: true }, database: { ok: false }, workspaces: { ok: true }, model: { ok: true } },
    });
  }
  // A valid key gets what the operator needs.
  const keyed = await server.request("GET", "/readyz", { headers: as(KEY) });
  expect(keyed.status).toBe(503);
  expect(keyed.body.checks.database.message).toMatch(/^the lock file .*agent\.db-lock was deleted/);
  expect(Object.keys(keyed.body.checks)).toEqual(CHECKS);
  expect(keyed.body.shell).toMatchObject({ sandbox: expect.any(String), network: expect.any(Boolean) });
});

it("keys set: the database file deleted, an anonymous /readyz names no path and not the shell", async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: "k".repeat(32) } });
  unlinkSync(join(server.dir, "agent.db"));
  const ready = await server.request("GET", "/readyz");
  expect(ready.status).toBe(503);
  const text = JSON.stringify(ready.body);
  expect({ leaksPath: text.includes(server.dir), leaksShell: "shell" in ready.body }).toEqual({
    leaksPath: false,
    leaksShell: false,
  });
});

it("no keys set: every caller gets the messages and the shell", async () => {
  server = await startTestServer();
  rmSync(join(server.dir, "agent.db-lock"));
  const ready = await server.request("GET", "/readyz");
  expect(ready.status).toBe(503);
  expect(ready.body.checks.database.message).toMatch(/^the lock file .*agent\.db-lock was deleted/);
  expect(ready.body.shell).toMatchObject({ sandbox: expect.any(String), network: expect.any(Boolean) });
});
