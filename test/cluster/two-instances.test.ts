import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { gate } from "../fakes/gate.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api } from "../helpers/child-server.js";
import { expectWholeRun, type Instances, startInstances } from "../helpers/instances.js";
import { openSse } from "../helpers/sse-client.js";

let upstream: FakeUpstream;
let cluster: Instances | null = null;

beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await cluster?.stop();
  await upstream.close();
});

/**
 * The two instances the tests share (two server starts and a database each cost more than a
 * test itself): started by the first test, and again after a test that left them otherwise
 * than it found them (see afterEach).
 */
async function twoInstances(): Promise<Instances> {
  cluster ??= await startInstances({ count: 2, upstream });
  return cluster;
}

/**
 * A test leaves the shared instances as it found them, or they are not shared on: every
 * scripted reply taken, no run left unfinished, and each instance listening on PostgreSQL
 * (a test that cut a listening connection waits here for it to be back).
 */
afterEach(async () => {
  upstream.fallback = undefined;
  const shared = cluster;
  if (!shared) return;
  try {
    upstream.assertComplete();
    expect(await shared.query("SELECT id, status FROM runs WHERE status <> 'finished'")).toEqual([]);
    const names = shared.servers.map((server) => `agent-listener-${server.pid}`);
    const deadline = Date.now() + 10_000;
    let listening: { name: string }[] = [];
    for (;;) {
      listening = await shared.query(
        "SELECT application_name AS name FROM pg_stat_activity WHERE application_name = ANY($1) ORDER BY 1",
        [names],
      );
      if (listening.length === names.length || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(listening.map((row) => row.name)).toEqual([...names].sort());
  } catch (err) {
    cluster = null;
    await shared.stop();
    throw err;
  }
});

/** A promise and the function that settles it. */
async function startRun(url: string, session: Record<string, unknown> = {}) {
  const created = await api(url, "POST", "/sessions", session);
  expect(created.status).toBe(201);
  const run = await api(url, "POST", `/sessions/${created.body.id}/runs`, { input: "do the thing" });
  expect(run.status).toBe(201);
  return { sessionId: created.body.id as string, runId: run.body.id as string };
}

const allowShell = { approval: { tools: { shell: "allow" } } };

describe("two server processes over one PostgreSQL", () => {
  it("a run executing on A is watched live on B: every event once, in order, to run.finished; Last-Event-ID resumes on B", async () => {
    const shared = await twoInstances();
    const [a, b] = shared.servers as [(typeof shared.servers)[0], (typeof shared.servers)[0]];
    const held = gate();
    upstream.enqueue(
      { toolCalls: [{ id: "call_1", name: "shell", arguments: '{"command":"echo hi"}' }] },
      { text: ["one ", "two ", "three"], gate: held.wait },
    );
    const { runId } = await startRun(a.url, allowShell);
    const whole = await openSse(`${b.url}/runs/${runId}/events`);
    const resumed = await openSse(`${b.url}/runs/${runId}/events`);
    // Live: B sees the streamed text while the run still waits on A.
    await whole.waitFor((e) => e.event === "text.delta");
    const seen = await resumed.waitFor((e) => e.event === "message" && e.json.message.role === "tool");
    resumed.close();
    const continuation = await openSse(`${b.url}/runs/${runId}/events`, {
      headers: { "last-event-id": seen.id as string },
    });
    held.open();
    const events = await whole.ended;
    expectWholeRun(events);
    expect(events.map((e) => e.event)).toContain("tool.started");
    const rest = await continuation.ended;
    expect(Number(rest[0]?.id)).toBe(Number(seen.id) + 1);
    expect(rest.map((e) => e.data)).toEqual(events.slice(Number(seen.id)).map((e) => e.data));
    // What B relayed is what A stored.
    const onA = await (await openSse(`${a.url}/runs/${runId}/events`)).ended;
    expect(events.map((e) => e.data)).toEqual(onA.map((e) => e.data));
  });

  it("a retried POST ?wait=true (same Idempotency-Key) on B waits for the run executing on A and answers its end", async () => {
    const shared = await twoInstances();
    const [a, b] = shared.servers as [(typeof shared.servers)[0], (typeof shared.servers)[0]];
    const held = gate();
    upstream.enqueue({ text: ["the ", "answer"], gate: held.wait });
    const session = await api(a.url, "POST", "/sessions", {});
    const post = (url: string, query: string) =>
      fetch(`${url}/sessions/${session.body.id}/runs${query}`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "retry-1" },
        body: JSON.stringify({ input: "do the thing" }),
      });
    const started = await post(a.url, "");
    expect(started.status).toBe(201);
    const runId = (await started.json()).id as string;
    const watcher = await openSse(`${b.url}/runs/${runId}/events`);
    await watcher.waitFor((e) => e.event === "text.delta");
    let answered = false;
    const waited = post(b.url, "?wait=true").then(async (res) => {
      answered = true;
      return { status: res.status, body: await res.json() };
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false);
    held.open();
    const result = await waited;
    expect(result.status).toBe(200);
    expect(result.body.run).toMatchObject({ id: runId, status: "finished", stopReason: "complete" });
    expect(result.body.text).toBe("the answer");
    expectWholeRun(await watcher.ended);
  });

  it("the listening connection of B is terminated mid-run: B reconnects, and its watcher still gets the whole run", async () => {
    const shared = await twoInstances();
    const [a, b] = shared.servers as [(typeof shared.servers)[0], (typeof shared.servers)[0]];
    const held = gate();
    upstream.enqueue(
      { toolCalls: [{ id: "call_1", name: "shell", arguments: '{"command":"echo hi"}' }] },
      { text: ["after ", "the ", "cut"], gate: held.wait },
    );
    const { runId } = await startRun(a.url, allowShell);
    const watcher = await openSse(`${b.url}/runs/${runId}/events`);
    await watcher.waitFor((e) => e.event === "text.delta");
    const name = `agent-listener-${b.pid}`;
    const killed = await shared.query<{ ok: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1",
      [name],
    );
    expect(killed).toEqual([{ ok: true }]);
    // Committed while B's listener is down.
    held.open();
    expectWholeRun(await watcher.ended);
    // B listens again, on a new connection.
    const deadline = Date.now() + 10_000;
    let listening: { pid: number }[] = [];
    while (listening.length === 0 && Date.now() < deadline) {
      listening = await shared.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [name]);
      if (listening.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(listening).toHaveLength(1);
  });

  it("a decision posted on B reaches the run waiting on A: the same decision again is 200, a conflicting one 409", async () => {
    const shared = await twoInstances();
    const [a, b] = shared.servers as [(typeof shared.servers)[0], (typeof shared.servers)[0]];
    upstream.enqueue(
      { toolCalls: [{ id: "call_ask", name: "shell", arguments: '{"command":"echo approved > out.txt"}' }] },
      { text: "done" },
    );
    const { runId, sessionId } = await startRun(a.url);
    const watcher = await openSse(`${b.url}/runs/${runId}/events`);
    await watcher.waitFor((e) => e.event === "approval.requested");
    const pending = await api(b.url, "GET", `/runs/${runId}/approvals`);
    expect(pending.body.items.map((p: { toolCallId: string }) => p.toolCallId)).toEqual(["call_ask"]);
    const decided = await api(b.url, "POST", `/runs/${runId}/approvals/call_ask`, { decision: "approve" });
    expect(decided.status).toBe(200);
    expect(decided.body.status).toBe("approved");
    expect((await api(b.url, "POST", `/runs/${runId}/approvals/call_ask`, { decision: "approve" })).status).toBe(200);
    const conflicting = await api(b.url, "POST", `/runs/${runId}/approvals/call_ask`, { decision: "deny" });
    expect(conflicting.status).toBe(409);
    expect(conflicting.body.error.code).toBe("APPROVAL_CONFLICT");
    const events = await watcher.ended;
    expectWholeRun(events);
    const resolved = events.filter((e) => e.event === "approval.resolved");
    expect(resolved.map((e) => e.json.decision)).toEqual(["approve"]);
    expect(events.at(-1)?.json.run.stopReason).toBe("complete");
    expect(readFileSync(join(shared.dir, "workspaces", sessionId, "out.txt"), "utf8")).toBe("approved\n");
  });

  it("DELETE /runs/{id} on B cancels the run executing on A: 202 cancelling, and the run ends aborted", async () => {
    const shared = await twoInstances();
    const [a, b] = shared.servers as [(typeof shared.servers)[0], (typeof shared.servers)[0]];
    upstream.enqueue({ text: ["never ", "ending"], gate: new Promise(() => {}) });
    const { runId } = await startRun(a.url);
    const watcher = await openSse(`${b.url}/runs/${runId}/events`);
    await watcher.waitFor((e) => e.event === "text.delta");
    const cancelled = await api(b.url, "DELETE", `/runs/${runId}`);
    expect(cancelled.status).toBe(202);
    expect(cancelled.body.status).toBe("cancelling");
    const events = await watcher.ended;
    expectWholeRun(events);
    expect(events.at(-1)?.json.run.stopReason).toBe("aborted");
    expect(events.at(-1)?.json.run.stopDetail).toContain("DELETE /runs/{id}");
    expect((await api(a.url, "DELETE", `/runs/${runId}`)).status).toBe(200);
  });

  it("DELETE /sessions/{id} on B waits for the end of its run executing on A, then deletes the session", async () => {
    const shared = await twoInstances();
    const [a, b] = shared.servers as [(typeof shared.servers)[0], (typeof shared.servers)[0]];
    upstream.enqueue({ text: ["never ", "ending"], gate: new Promise(() => {}) });
    const { runId, sessionId } = await startRun(a.url);
    const watcher = await openSse(`${a.url}/runs/${runId}/events`);
    await watcher.waitFor((e) => e.event === "text.delta");
    expect((await api(b.url, "DELETE", `/sessions/${sessionId}`)).status).toBe(204);
    // The run had ended (aborted) before its session was deleted.
    const events = await watcher.ended;
    expect(events.at(-1)?.json.run.stopReason).toBe("aborted");
    expect((await api(a.url, "GET", `/runs/${runId}`)).status).toBe(404);
  });

  it("A's listening connection terminated: a decision posted on B still reaches the run on A", async () => {
    const shared = await twoInstances();
    const [a, b] = shared.servers as [(typeof shared.servers)[0], (typeof shared.servers)[0]];
    upstream.enqueue(
      { toolCalls: [{ id: "call_ask", name: "shell", arguments: '{"command":"echo ok"}' }] },
      { text: "done" },
    );
    const { runId } = await startRun(a.url);
    const watcher = await openSse(`${b.url}/runs/${runId}/events`);
    await watcher.waitFor((e) => e.event === "approval.requested");
    const killed = await shared.query<{ ok: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1",
      [`agent-listener-${a.pid}`],
    );
    expect(killed).toEqual([{ ok: true }]);
    expect((await api(b.url, "POST", `/runs/${runId}/approvals/call_ask`, { decision: "deny" })).status).toBe(200);
    const events = await watcher.ended;
    expectWholeRun(events);
    expect(events.filter((e) => e.event === "approval.resolved").map((e) => e.json.decision)).toEqual(["deny"]);
  });

  it("per-key limits hold across the two: parallel session creations and runs through A and B stop at the key's quota", async () => {
    const key = "key-cluster-0123456789abcdef";
    // Two instances of their own, with keys and quotas.
    const keyed = await startInstances({
      count: 2,
      upstream,
      env: { AGENT_API_KEYS: key, MAX_SESSIONS_PER_KEY: "5", MAX_RUNS_PER_KEY: "2" },
    });
    onTestFinished(() => keyed.stop());
    const urls = keyed.servers.map((server) => server.url);
    const call = async (i: number, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${urls[i % urls.length]}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: await res.json() };
    };
    const sessions = await Promise.all(Array.from({ length: 12 }, (_, i) => call(i, "POST", "/sessions", {})));
    expect(sessions.filter((r) => r.status === 201)).toHaveLength(5);
    const refused = sessions.filter((r) => r.status !== 201);
    expect(refused.map((r) => [r.status, r.body.error.code])).toEqual(refused.map(() => [429, "TOO_MANY_SESSIONS"]));

    upstream.fallback = () => ({ text: "held", gate: new Promise(() => {}) });
    const ids = sessions.filter((r) => r.status === 201).map((r) => r.body.id as string);
    const runs = await Promise.all(ids.map((id, i) => call(i, "POST", `/sessions/${id}/runs`, { input: "hi" })));
    expect(runs.filter((r) => r.status === 201)).toHaveLength(2);
    const busy = runs.filter((r) => r.status !== 201);
    expect(busy.map((r) => [r.status, r.body.error.code, r.body.error.details.scope])).toEqual(
      busy.map(() => [429, "TOO_MANY_RUNS", "key"]),
    );
  });
});
