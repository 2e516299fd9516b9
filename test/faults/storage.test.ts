import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { FaultyStore } from "../fakes/faulty-store.js";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** How long a run's end may fail to be stored before it is reported anyway, in these tests. */
const FINISH_REPORT_MS = 300;

let server: TestServer;
let faulty: FaultyStore;
beforeEach(async () => {
  server = await startTestServer({
    finishReportMs: FINISH_REPORT_MS,
    wrapStore: (store) => {
      faulty = new FaultyStore(store);
      return faulty.store;
    },
  });
});
afterEach(async () => {
  faulty.heal();
  await server.close();
});

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

it("a disk that fills up mid-run: the run ends error within a bounded time (?wait=true answers), readyz 503 until writes work, nothing half-written", async () => {
  let release!: () => void;
  let arrived!: () => void;
  const requested = new Promise<void>((r) => (arrived = r));
  server.upstream.enqueue({
    text: Array.from({ length: 20 }, () => "y".repeat(10_000)),
    gate: new Promise<void>((r) => (release = r)),
    onRequest: () => arrived(),
  });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const waiting = server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "write a lot" } });
  await requested;
  faulty.failWrites("full");
  const failedAt = Date.now();
  release();

  // The answer comes although nothing can be stored: the run's end is reported, an error.
  const answered = await waiting;
  const elapsed = Date.now() - failedAt;
  expect(answered.status).toBe(200);
  expect(answered.body.run).toMatchObject({ status: "finished", stopReason: "error" });
  expect(answered.body.run.error.code).toBe("PERSISTENCE_FAILED");
  // The failure's kind and what to do, not the database's own text.
  expect(answered.body.run.error.message).toBe("could not save the run's progress: the database's disk is full");
  expect(answered.body.run.stopDetail).toMatch(/\(PERSISTENCE_FAILED\); free space on the database's disk/);
  expect(elapsed).toBeLessThan(FINISH_REPORT_MS + 3000);
  const runId = answered.body.run.id;
  expect((await server.request("GET", `/runs/${runId}`)).body.status).toBe("finished");
  const ready = await server.request("GET", "/readyz");
  expect(ready.status).toBe(503);
  expect(ready.body.checks.database).toMatchObject({ ok: false, message: expect.stringMatching(/disk is full/) });
  expect((await server.request("GET", "/healthz")).status).toBe(200);
  // Nothing new starts while nothing can be stored.
  const again = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "again" } });
  expect(again.status).toBe(503);

  faulty.heal();
  await until(async () => (await server.ctx.store.runs.get(runId))?.status === "finished", "the end to be stored");
  const stored = await server.ctx.store.runs.get(runId);
  expect(stored).toMatchObject({ stopReason: "error", error: { code: "PERSISTENCE_FAILED" } });
  expect((await server.request("GET", "/readyz")).status).toBe(200);
  const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
  expect(messages.map((m: { role: string }) => m.role)).toEqual(["user"]);
  const events = await server.ctx.store.events.after(runId, 0);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.at(-1)?.type).toBe("run.finished");
});

it("a tool result that cannot be written still leaves every call answered, and the session usable", async () => {
  const session = (await server.request("POST", "/sessions", { body: { approval: { tools: { read_file: "ask" } } } }))
    .body;
  const record = await server.ctx.sessions.record(session.id, null);
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
  faulty.failChange((change) => change.kind === "message" && change.message.role === "tool", {
    kind: "full",
    times: 1,
  });
  const decided = await server.request("POST", `/runs/${run.id}/approvals/call_r`, { body: { decision: "approve" } });
  expect(decided.status).toBe(200);
  const finished = await server.ctx.manager.waitForFinish(run.id);
  expect(finished.stopReason).toBe("error");
  expect(finished.error?.code).toBe("PERSISTENCE_FAILED");
  expect(toolResultCodes(await validHistory(server, session.id))).toEqual(["RESULT_LOST", "NOT_EXECUTED"]);
  server.upstream.enqueue({ text: "still here" });
  const next = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "again" } });
  expect(next.body.run.stopReason).toBe("complete");
});

it("with writes that take their time, a started run answers 201 only once its input is committed", async () => {
  server.upstream.enqueue({ text: "hello" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  // The run's row is written; the commit of its user message waits.
  const release = faulty.stallWrites("message");
  let answered = false;
  const starting = server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "hi" } }).then((res) => {
    answered = true;
    return res;
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(answered).toBe(false);
  release();
  const started = await starting;
  expect(started.status).toBe(201);
  // The answer came after the user message was stored: the history already holds it.
  const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
  expect(messages[0]).toMatchObject({ role: "user", content: "hi", runId: started.body.id });
  await server.ctx.manager.waitForFinish(started.body.id);
});
