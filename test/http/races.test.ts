import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { door } from "../fakes/gate.js";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { sharedTestServer } from "../helpers/shared-server.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
/** Servers started for one test (one of them its `server`), closed after it. */
const forTest: TestServer[] = [];
async function startForTest(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const started = await startTestServer(options);
  forTest.push(started);
  return started;
}
afterEach(async () => {
  for (const started of forTest.splice(0)) await started.close();
});

/** A run whose first call (a shell command writing a file) waits for approval. */
async function runAwaitingApproval() {
  server.upstream.enqueue({
    toolCalls: [
      { id: "call_1", name: "shell", arguments: '{"command":"echo x > ran.txt"}' },
      { id: "call_2", name: "list_files", arguments: "{}" },
    ],
  });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  const watcher = await openSse(`${server.url}/runs/${run.id}/events`);
  await watcher.waitFor((e) => e.event === "approval.requested");
  return { session, run, watcher };
}

describe.each(["sqlite", "postgres"] as const)("races on %s, driven in a fixed order", (backend) => {
  // One server for the backend's tests, each in a session of its own.
  sharedTestServer(
    () => startTestServer({ backend }),
    (shared) => {
      server = shared;
    },
  );

  it("approve then DELETE in the same tick: the approval is recorded but no tool starts, the run ends aborted", async () => {
    const { session, run, watcher } = await runAwaitingApproval();
    const decided = server.ctx.manager.decide({ runId: run.id, toolCallId: "call_1", decision: "approve" });
    const cancelled = server.ctx.manager.cancel(run.id);
    await Promise.all([decided, cancelled]);
    const events = await watcher.ended;
    expect(events.map((e) => e.event)).toContain("approval.resolved");
    expect(events.map((e) => e.event)).not.toContain("tool.started");
    expect(events.at(-1)?.json.run.stopReason).toBe("aborted");
    expect(toolResultCodes(await validHistory(server, session.id))).toEqual(["ABORTED", "ABORTED"]);
  });

  it("DELETE then approve: the approval is refused with 409 and nothing runs", async () => {
    const { run, watcher } = await runAwaitingApproval();
    await server.ctx.manager.cancel(run.id);
    const late = await server.request("POST", `/runs/${run.id}/approvals/call_1`, { body: { decision: "approve" } });
    expect(late.status).toBe(409);
    const events = await watcher.ended;
    expect(events.map((e) => e.event)).not.toContain("tool.started");
    expect(events.at(-1)?.json.run.stopReason).toBe("aborted");
  });

  it("ten concurrent starts on one session create exactly one run; the other nine are 409 SESSION_BUSY naming it", async () => {
    let release!: () => void;
    server.upstream.enqueue({ text: "the one", gate: new Promise<void>((r) => (release = r)) });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const starts = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        server.request("POST", `/sessions/${session.id}/runs`, { body: { input: `start ${i}` } }),
      ),
    );
    const created = starts.filter((res) => res.status === 201);
    const busy = starts.filter((res) => res.status === 409);
    expect(created).toHaveLength(1);
    expect(busy).toHaveLength(9);
    const runId = created[0]?.body.id;
    for (const res of busy) expect(res.body.error).toMatchObject({ code: "SESSION_BUSY", details: { runId } });
    release();
    const runs = (await server.request("GET", `/sessions/${session.id}/runs`)).body.items;
    expect(runs.map((r: { id: string }) => r.id)).toEqual([runId]);
    expect((await server.ctx.manager.waitForFinish(runId)).stopReason).toBe("complete");
  });

  it("two watchers of one run receive identical, gapless streams", async () => {
    let release!: () => void;
    server.upstream.enqueue({ text: ["one ", "two ", "three"], gate: new Promise<void>((r) => (release = r)) });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "x" } })).body;
    const a = await openSse(`${server.url}/runs/${run.id}/events`);
    const b = await openSse(`${server.url}/runs/${run.id}/events`);
    await Promise.all([a.waitFor((e) => e.event === "run.started"), b.waitFor((e) => e.event === "run.started")]);
    release();
    const [ea, eb] = await Promise.all([a.ended, b.ended]);
    expect(ea.map((e) => e.id)).toEqual(eb.map((e) => e.id));
    expect(ea.map((e) => Number(e.id))).toEqual(ea.map((_, i) => i + 1));
    expect(ea.map((e) => e.event)).toContain("text.delta");
    expect(ea.at(-1)?.event).toBe("run.finished");
  });

  it("an unanswered approval is denied at the timeout (fail closed) and the model sees the denial", async () => {
    server = await startForTest({ env: { APPROVAL_TIMEOUT_MS: "100" } });
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_t", name: "write_file", arguments: '{"path":"x","content":"y"}' }] },
      { text: "ok, not written" },
    );
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const res = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
    expect(res.body.run.stopReason).toBe("complete");
    const sent = server.upstream.requests[1]?.body.messages.at(-1);
    expect(sent).toMatchObject({ role: "tool", tool_call_id: "call_t" });
    expect(sent.content).toMatch(/denied: no decision within the approval timeout/);
  });
});

describe("tool refusals through the loop", () => {
  beforeEach(async () => {
    server = await startForTest();
  });

  it("each refusal is a tool result the model sees, and the run goes on", async () => {
    server.upstream.enqueue(
      {
        toolCalls: [
          { id: "c1", name: "read_file", arguments: '{"path":"../../etc/passwd"}' },
          { id: "c2", name: "read_file", arguments: '{"path":"/etc/passwd"}' },
          { id: "c3", name: "read_file", arguments: '{"path":"missing.txt"}' },
          { id: "c4", name: "read_file", arguments: '{"nope":1}' },
          { id: "c5", name: "teleport", arguments: "{}" },
        ],
      },
      { text: "I could not read those" },
    );
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const res = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "read" } });
    expect(res.body.run.stopReason).toBe("complete");
    const history = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
    const codes = history
      .filter((m: { role: string }) => m.role === "tool")
      .map((m: { metadata: { errorCode: string } }) => m.metadata.errorCode);
    expect(codes).toEqual([
      "PATH_OUTSIDE_WORKSPACE",
      "PATH_OUTSIDE_WORKSPACE",
      "NOT_FOUND",
      "INVALID_ARGUMENTS",
      "UNKNOWN_TOOL",
    ]);
    expect(JSON.stringify(history)).not.toContain("root:");
    expect(history.at(-1).content).toBe("I could not read those");
  });
});

describe("idle streams", () => {
  it("an idle event stream gets comment heartbeats and is marked unbuffered for proxies", async () => {
    server = await startForTest({ sseHeartbeatMs: 50 });
    let release!: () => void;
    server.upstream.enqueue({ text: "late", gate: new Promise<void>((r) => (release = r)) });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "x" } })).body;
    const stream = await openSse(`${server.url}/runs/${run.id}/events`);
    expect(stream.headers["x-accel-buffering"]).toBe("no");
    expect(stream.headers["cache-control"]).toMatch(/no-cache/);
    const deadline = Date.now() + 5000;
    while (stream.comments.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(stream.comments.length).toBeGreaterThanOrEqual(2);
    release();
    const events = await stream.ended;
    expect(events.at(-1)?.event).toBe("run.finished");
  });
});

/** The store with `hooks` awaited before each session delete and before each run insert. */
function withHooks(
  store: Store,
  hooks: { beforeDelete?: (sessionId: string) => Promise<void>; beforeCreate?: () => Promise<void> },
): Store {
  return {
    ...store,
    sessions: {
      ...store.sessions,
      delete: async (id) => {
        await hooks.beforeDelete?.(id);
        return store.sessions.delete(id);
      },
    },
    runs: {
      ...store.runs,
      create: async (...args) => {
        await hooks.beforeCreate?.();
        return store.runs.create(...args);
      },
    },
  };
}

describe.each(["sqlite", "postgres"] as const)("a session being deleted, on %s", (backend) => {
  it("is gone from the moment its DELETE is taken: a run started meanwhile is 404 and nothing of it is left", async () => {
    const held = door();
    server = await startForTest({
      backend,
      // The store's delete held open, as a large session's pieces hold it.
      wrapStore: (store) => withHooks(store, { beforeDelete: held.pass }),
    });
    server.upstream.enqueue({ text: ["first answer"] });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const first = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "one" } });
    expect(first.body.run.status).toBe("finished");

    const deleting = server.request("DELETE", `/sessions/${session.id}`);
    await held.arrived;
    server.upstream.enqueue({ text: ["never asked"] });
    const started = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "two" } });
    expect(started.status).toBe(404);
    expect(started.body.error.code).toBe("NOT_FOUND");
    expect((await server.request("GET", `/sessions/${session.id}`)).status).toBe(404);
    expect((await server.request("GET", `/sessions/${session.id}/messages`)).status).toBe(404);
    held.release();
    expect((await deleting).status).toBe(204);
    expect(await server.ctx.store.runs.list({ sessionId: session.id, limit: 10, cursor: null })).toEqual({
      items: [],
      nextCursor: null,
    });
    expect(server.upstream.requests).toHaveLength(1);
  });

  it("a start past the session's lookup when its DELETE is taken: the run it admits is ended and deleted with the session", async () => {
    const held = door();
    const activeAtDelete: (string | null)[] = [];
    server = await startForTest({
      backend,
      // The run's insert held open: the start has found the session, its run is not stored yet.
      // The session's rows go only once no run of it is live: what is active then is noted.
      wrapStore: (store) =>
        withHooks(store, {
          beforeDelete: async (id) => {
            activeAtDelete.push((await store.runs.active(id))?.id ?? null);
          },
          beforeCreate: held.pass,
        }),
    });
    let answer!: () => void;
    server.upstream.enqueue({ text: ["held"], gate: new Promise<void>((resolve) => (answer = resolve)) });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const starting = server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } });
    await held.arrived;
    const deleting = server.request("DELETE", `/sessions/${session.id}`);
    await until(
      async () => (await server.request("GET", `/sessions/${session.id}`)).status,
      (status) => status === 404,
      "the delete to be taken",
    );
    held.release();
    const started = await starting;
    expect(started.status).toBe(201);
    expect((await deleting).status).toBe(204);
    expect(activeAtDelete).toEqual([null]);
    expect(await server.ctx.manager.activeRunId(session.id)).toBeNull();
    expect((await server.request("GET", `/runs/${started.body.id}`)).status).toBe(404);
    expect((await server.ctx.store.runs.list({ sessionId: session.id, limit: 10, cursor: null })).items).toEqual([]);
    answer();
  });
});

describe("two instances over one PostgreSQL database", () => {
  it("a run the other stores just before the delete's statement is ended first, not deleted while it runs", async () => {
    const database = await createTestPgDatabase();
    onTestFinished(() => database.drop());
    const held = door();
    // What each delete statement finds of the session's runs: [id, status, stop reason].
    const runsAtDelete: [string, string, string | null][][] = [];
    server = await startForTest({
      pgUrl: database.url,
      // The first delete held once its runs were ended: the other instance starts one then.
      wrapStore: (store) =>
        withHooks(store, {
          beforeDelete: async (id) => {
            if (runsAtDelete.length === 0) await held.pass();
            const { items } = await store.runs.list({ sessionId: id, limit: 10, cursor: null });
            runsAtDelete.push(items.map((r) => [r.id, r.status, r.stopReason]));
          },
        }),
    });
    const other = await startTestServer({ pgUrl: database.url, upstream: server.upstream });
    let answer!: () => void;
    server.upstream.enqueue({ text: ["held"], gate: new Promise<void>((resolve) => (answer = resolve)) });
    try {
      const session = (await server.request("POST", "/sessions", { body: {} })).body;
      const deleting = server.request("DELETE", `/sessions/${session.id}`);
      await held.arrived;
      const started = await other.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } });
      expect(started.status).toBe(201);
      held.release();
      expect((await deleting).status).toBe(204);
      // Refused while the run was live, then deleted once it had ended (aborted).
      expect(runsAtDelete).toEqual([[[started.body.id, "running", null]], [[started.body.id, "finished", "aborted"]]]);
      expect((await other.request("GET", `/runs/${started.body.id}`)).status).toBe(404);
    } finally {
      answer();
      await other.close();
    }
  });

  it("a start on one finds the session, the other deletes it before the run is stored: 404, not a 5xx", async () => {
    const database = await createTestPgDatabase();
    // After afterEach has closed `server`, whose pool is on this database.
    onTestFinished(() => database.drop());
    const held = door();
    server = await startForTest({ pgUrl: database.url });
    const other = await startTestServer({
      pgUrl: database.url,
      upstream: server.upstream,
      // The run's insert held until the session is gone.
      wrapStore: (store) => withHooks(store, { beforeCreate: held.pass }),
    });
    try {
      const session = (await server.request("POST", "/sessions", { body: {} })).body;
      const starting = other.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } });
      await held.arrived;
      expect((await server.request("DELETE", `/sessions/${session.id}`)).status).toBe(204);
      held.release();
      const started = await starting;
      expect(started.status).toBe(404);
      expect(started.body.error.code).toBe("NOT_FOUND");
      expect(await other.ctx.store.runs.list({ sessionId: session.id, limit: 10, cursor: null })).toEqual({
        items: [],
        nextCursor: null,
      });
      expect(server.upstream.requests).toHaveLength(0);
    } finally {
      await other.close();
    }
  });
});
