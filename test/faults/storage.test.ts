import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  server.ctx.store.db.pragma("max_page_count = 1073741823");
  await server.close();
});

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

it("a database that fills up mid-run ends the run with an actionable error, readyz 503 until writes work, nothing half-written", async () => {
  let release!: () => void;
  let arrived!: () => void;
  const requested = new Promise<void>((r) => (arrived = r));
  server.upstream.enqueue({
    text: Array.from({ length: 20 }, () => "y".repeat(10_000)),
    gate: new Promise<void>((r) => (release = r)),
    onRequest: () => arrived(),
  });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write a lot" } })).body;
  await requested;
  const db = server.ctx.store.db;
  db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true })}`);
  release();

  // The run reports its stats once the model turn is over, i.e. after its commit was tried.
  await until(
    async () => (await server.request("GET", `/runs/${run.id}`)).body.stats.modelCalls === 1,
    "the model turn to end",
  );
  expect(server.ctx.store.health.failure).not.toBeNull();
  expect((await server.request("GET", "/readyz")).status).toBe(503);
  const ready = await server.request("GET", "/readyz");
  expect(ready.body.checks.database.ok).toBe(false);
  expect(ready.body.checks.database.message).toMatch(/disk is full/);
  expect((await server.request("GET", "/healthz")).status).toBe(200);
  expect((await server.request("GET", `/runs/${run.id}`)).body.status).not.toBe("finished");

  db.pragma("max_page_count = 1073741823");
  const finished = await server.ctx.manager.waitForFinish(run.id);
  expect(finished.stopReason).toBe("error");
  expect(finished.error?.code).toBe("PERSISTENCE_FAILED");
  expect(finished.error?.message).toMatch(/could not save the run's progress: database or disk is full/);
  expect((await server.request("GET", "/readyz")).status).toBe(200);

  const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
  expect(messages.map((m: { role: string }) => m.role)).toEqual(["user"]);
  const events = server.ctx.store.events.after(run.id, 0);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.at(-1)?.type).toBe("run.finished");
});

it("a tool result that cannot be written still leaves every call answered, and the session usable", async () => {
  const session = (await server.request("POST", "/sessions", { body: { approval: { tools: { read_file: "ask" } } } }))
    .body;
  const record = server.ctx.sessions.record(session.id, null);
  writeFileSync(join(server.ctx.sessions.workspacePath(record), "big.txt"), "z".repeat(90_000));
  server.upstream.enqueue({
    toolCalls: [
      { id: "call_r", name: "read_file", arguments: '{"path":"big.txt"}' },
      { id: "call_l", name: "list_files", arguments: "{}" },
    ],
  });
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "read it" } })).body;
  await until(
    async () => (await server.request("GET", `/runs/${run.id}/approvals`)).body.items.length === 1,
    "approval",
  );
  const db = server.ctx.store.db;
  db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true })}`);
  const decided = await server.request("POST", `/runs/${run.id}/approvals/call_r`, { body: { decision: "approve" } });
  expect(decided.status).toBe(200);
  const finished = await server.ctx.manager.waitForFinish(run.id);
  db.pragma("max_page_count = 1073741823");
  expect(finished.stopReason).toBe("error");
  expect(finished.error?.code).toBe("PERSISTENCE_FAILED");
  expect(toolResultCodes(await validHistory(server, session.id))).toEqual(["RESULT_LOST", "NOT_EXECUTED"]);
  server.upstream.enqueue({ text: "still here" });
  const next = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "again" } });
  expect(next.body.run.stopReason).toBe("complete");
});
