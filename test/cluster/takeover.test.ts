import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { assertValidHistory } from "../../src/agent/history.js";
import type { AgentMessage } from "../../src/agent/messages.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { allStarted } from "../helpers/instances.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { hostPids } from "../helpers/processes.js";
import { openSse } from "../helpers/sse-client.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * Several server processes over one PostgreSQL database and one workspace volume: a run
 * survives the loss of the instance that executes it. Each instance is a real `node
 * dist/src/server.js` with its own INSTANCE_ID.
 */
let upstream: FakeUpstream;
let database: TestPgDatabase;
let dir: ReturnType<typeof tempDir>;
const children: ChildServer[] = [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream.close();
});
beforeEach(async () => {
  database = await createTestPgDatabase();
  dir = tempDir("cluster-");
});
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.process.signalCode === "SIGSTOP" || child.process.exitCode === null) child.process.kill("SIGCONT");
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
    await child.exited;
  }
  await database.drop();
  dir.cleanup();
});

/** An instance named `name`, with its own data dir, on the shared database and workspace volume. */
async function instance(name: string, env: Record<string, string> = {}): Promise<ChildServer> {
  const own = join(dir.path, name);
  mkdirSync(own);
  const child = await startChildServer({
    dir: own,
    upstreamURL: upstream.baseURL,
    env: {
      DATABASE_URL: database.url,
      WORKSPACE_ROOT: join(dir.path, "workspaces"),
      INSTANCE_ID: name,
      SHELL_SANDBOX: "off",
      LOG_LEVEL: "info",
      ...env,
    },
  });
  children.push(child);
  return child;
}

async function startRun(server: ChildServer, session: Record<string, unknown>) {
  const created = await api(server.url, "POST", "/sessions", session);
  expect(created.status).toBe(201);
  const run = await api(server.url, "POST", `/sessions/${created.body.id}/runs`, { input: "do the thing" });
  expect(run.status).toBe(201);
  return { sessionId: created.body.id as string, runId: run.body.id as string };
}

const countLines = (sessionId: string) => {
  const path = join(dir.path, "workspaces", sessionId, "count.txt");
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;
};

async function waitFor<T>(what: string, probe: () => Promise<T | null>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The run's stored end and history as `server` reads them, once it has finished. */
async function finished(server: ChildServer, run: { sessionId: string; runId: string }, timeoutMs: number) {
  const view = await waitFor(
    "the run to finish",
    async () => {
      const got = await api(server.url, "GET", `/runs/${run.runId}`);
      return got.body?.status === "finished" ? got.body : null;
    },
    timeoutMs,
  );
  const history = (await api(server.url, "GET", `/sessions/${run.sessionId}/messages?limit=200`)).body
    .items as AgentMessage[];
  expect(() => assertValidHistory(history)).not.toThrow();
  const events = await (await openSse(`${server.url}/runs/${run.runId}/events`)).ended;
  // Gapless from 1, ending with the one run.finished.
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
  expect(events.filter((e) => e.event === "run.finished")).toHaveLength(1);
  return { view, history, events };
}

const toolResults = (history: AgentMessage[]) =>
  history.filter((m) => m.role === "tool") as (AgentMessage & { metadata?: { errorCode?: string } })[];

describe("runs survive the loss of their instance (PostgreSQL, real processes)", () => {
  it("run on A, watched on B, approved on C; kill -9 of A mid-tool: one takeover, one INTERRUPTED result, B's stream gapless to run.finished", async () => {
    const lease = { RUN_LEASE_MS: "1500" };
    const [a, b, c] = await allStarted([instance("a", lease), instance("b", lease), instance("c", lease)]);
    upstream.enqueue({
      toolCalls: [
        { id: "call_t", name: "shell", arguments: JSON.stringify({ command: "echo x >> count.txt; sleep 30.611" }) },
      ],
    });
    const run = await startRun(a, { approval: { tools: { shell: "ask" } } });
    const watcher = await openSse(`${b.url}/runs/${run.runId}/events`);
    await watcher.waitFor((e) => e.event === "approval.requested");
    const approved = await api(c.url, "POST", `/runs/${run.runId}/approvals/call_t`, { decision: "approve" });
    expect(approved.status).toBe(200);
    await watcher.waitFor((e) => e.event === "tool.started");
    await waitFor("the command", async () => (hostPids(/^sleep 30\.611$/).length ? true : null), 10_000);
    a.process.kill("SIGKILL");
    await a.exited;
    upstream.enqueue({ text: "taken over" });
    const streamed = await watcher.ended;
    // Live on B across the takeover: every event once, in order, ending with the run's end.
    expect(streamed.map((e) => Number(e.id))).toEqual(streamed.map((_, i) => i + 1));
    expect(streamed.at(-1)?.event).toBe("run.finished");
    expect(streamed.at(-1)?.json.run.stopReason).toBe("complete");
    const { history, events } = await finished(b, run, 15_000);
    expect(streamed.map((e) => e.id)).toEqual(events.map((e) => e.id));
    const results = toolResults(history);
    expect(results).toHaveLength(1);
    expect(results[0]?.metadata?.errorCode).toBe("INTERRUPTED");
    expect(countLines(run.sessionId)).toBe(1);
    // One takeover: one of the peers logged it, the other did not. A reaper pass logs once it is
    // done, which may be after the run it resumed has ended.
    const logged = (peer: typeof b) => peer.output().includes("took over runs whose lease had expired");
    await waitFor("the takeover's log line", async () => ([b, c].some(logged) ? true : null), 10_000);
    expect([b, c].filter(logged)).toHaveLength(1);
    for (const pid of hostPids(/^sleep 30\.611$/)) process.kill(pid, "SIGKILL");
  });

  it("an interrupting start posted to B while the session's run awaits approval on A: A's run ends aborted, the new run starts and completes", async () => {
    const [a, b] = await allStarted([instance("a"), instance("b")]);
    upstream.enqueue({
      toolCalls: [{ id: "call_i", name: "shell", arguments: JSON.stringify({ command: "echo x >> count.txt" }) }],
    });
    const first = await startRun(a, { approval: { tools: { shell: "ask" } } });
    await waitFor(
      "the approval request",
      async () => ((await api(a.url, "GET", `/runs/${first.runId}/approvals`)).body?.items?.length ? true : null),
      10_000,
    );
    upstream.enqueue({ text: "the new run's answer" });
    const second = await api(b.url, "POST", `/sessions/${first.sessionId}/runs`, {
      input: "instead",
      ifBusy: "interrupt",
    });
    expect(second.status).toBe(201);
    const ended = (await api(b.url, "GET", `/runs/${first.runId}`)).body;
    expect(ended).toMatchObject({ status: "finished", stopReason: "aborted" });
    const { view, history } = await finished(b, { sessionId: first.sessionId, runId: second.body.id }, 15_000);
    expect(view.stopReason).toBe("complete");
    // The interrupted call was closed, never run.
    expect(toolResults(history).map((m) => m.metadata?.errorCode)).toEqual(["ABORTED"]);
    expect(countLines(first.sessionId)).toBe(0);
  });

  it("an interrupting start on B with a run queued behind A's: the new run starts first, the queued one after it", async () => {
    const [a, b] = await allStarted([instance("a"), instance("b")]);
    upstream.enqueue({
      toolCalls: [{ id: "call_q", name: "shell", arguments: JSON.stringify({ command: "echo x >> count.txt" }) }],
    });
    const first = await startRun(a, { approval: { tools: { shell: "ask" } } });
    await waitFor(
      "the approval request",
      async () => ((await api(a.url, "GET", `/runs/${first.runId}/approvals`)).body?.items?.length ? true : null),
      10_000,
    );
    const queued = await api(a.url, "POST", `/sessions/${first.sessionId}/runs`, { input: "later", ifBusy: "enqueue" });
    expect(queued.body.status).toBe("queued");
    upstream.enqueue({ text: "the interrupting run's answer" }, { text: "the queued run's answer" });
    const second = await api(b.url, "POST", `/sessions/${first.sessionId}/runs`, { input: "now", ifBusy: "interrupt" });
    expect(second.status).toBe(201);
    const interrupting = await finished(b, { sessionId: first.sessionId, runId: second.body.id }, 15_000);
    const later = await finished(b, { sessionId: first.sessionId, runId: queued.body.id }, 15_000);
    expect(interrupting.view.stopReason).toBe("complete");
    expect(later.view.stopReason).toBe("complete");
    // In that order: the interrupting run ran before the one that was queued.
    expect(Date.parse(later.view.createdAt)).toBeLessThan(Date.parse(interrupting.view.createdAt));
    const startedAt = (events: { event: string; json: { at: string } }[]) =>
      Date.parse(events.find((e) => e.event === "run.started")?.json.at ?? "");
    expect(startedAt(interrupting.events)).toBeLessThan(startedAt(later.events));
    expect((await api(b.url, "GET", `/runs/${first.runId}`)).body.stopReason).toBe("aborted");
  });

  it("an owner paused past its lease (SIGSTOP) has its writes refused after SIGCONT and runs nothing twice", async () => {
    const lease = { RUN_LEASE_MS: "1200" };
    const [a, b] = await allStarted([instance("a", lease), instance("b", lease)]);
    upstream.enqueue({
      toolCalls: [
        { id: "call_p", name: "shell", arguments: JSON.stringify({ command: "echo x >> count.txt; sleep 2.713" }) },
      ],
    });
    const run = await startRun(a, { approval: { tools: { shell: "allow" } } });
    await waitFor("the command", async () => (hostPids(/^sleep 2\.713$/).length ? true : null), 10_000);
    a.process.kill("SIGSTOP");
    upstream.enqueue({ text: "resumed elsewhere" });
    const { history } = await finished(b, run, 15_000);
    // The command (not stopped with its server) has ended by now; then the owner wakes up.
    await waitFor("the command to end", async () => (hostPids(/^sleep 2\.713$/).length ? null : true), 10_000);
    a.process.kill("SIGCONT");
    await waitFor(
      "the paused owner to notice",
      async () => (a.output().includes("another instance") ? true : null),
      10_000,
    );
    const after = await finished(b, run, 1_000);
    expect(after.history).toEqual(history);
    const results = toolResults(after.history);
    expect(results).toHaveLength(1);
    expect(results[0]?.metadata?.errorCode).toBe("INTERRUPTED");
    expect(countLines(run.sessionId)).toBe(1);
    // The woken owner is still up and serving.
    expect((await api(a.url, "GET", `/runs/${run.runId}`)).body.status).toBe("finished");
  });

  it("SIGTERM on the owner: a peer resumes its run at once (long before the lease would expire), its approval still pending", async () => {
    const lease = { RUN_LEASE_MS: "60000" };
    const [a, b] = await allStarted([instance("a", lease), instance("b", lease)]);
    upstream.enqueue({
      toolCalls: [{ id: "call_a", name: "shell", arguments: JSON.stringify({ command: "echo x >> count.txt" }) }],
    });
    const run = await startRun(a, { approval: { tools: { shell: "ask" } } });
    await waitFor(
      "the approval request",
      async () => ((await api(a.url, "GET", `/runs/${run.runId}/approvals`)).body?.items?.length ? true : null),
      10_000,
    );
    const stoppedAt = Date.now();
    a.process.kill("SIGTERM");
    expect(await a.exited).toBe(0);
    // The peer has taken the run when it accepts the decision (a run nobody executes refuses it).
    await waitFor(
      "the peer to take the run",
      async () =>
        (await api(b.url, "POST", `/runs/${run.runId}/approvals/call_a`, { decision: "approve" })).status === 200
          ? true
          : null,
      10_000,
    );
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    upstream.enqueue({ text: "done" });
    const { view, history } = await finished(b, run, 10_000);
    expect(view.stopReason).toBe("complete");
    expect(toolResults(history)).toHaveLength(1);
    expect(toolResults(history)[0]).toMatchObject({ toolCallId: "call_a", isError: false });
    expect(countLines(run.sessionId)).toBe(1);
  });

  it("SIGTERM on an instance: new connections are refused at once (a proxy retries them on a peer) while its tool gets its grace and its open streams stay", async () => {
    const [a, b] = await allStarted([instance("a"), instance("b")]);
    upstream.enqueue({
      toolCalls: [{ id: "call_s", name: "shell", arguments: JSON.stringify({ command: "sleep 1.5; echo slept" }) }],
    });
    const run = await startRun(a, { approval: { tools: { shell: "allow" } } });
    const watcher = await openSse(`${a.url}/runs/${run.runId}/events`);
    await watcher.waitFor((e) => e.event === "tool.started");
    // The model's answer to the tool's result, for whichever instance asks (the peer, at once).
    upstream.enqueue({ text: "done" });
    a.process.kill("SIGTERM");
    await sleep(300);
    // Still up (the tool has its grace), but a new connection is not taken.
    expect(a.process.exitCode).toBeNull();
    const answered = await fetch(`${a.url}/healthz`).then(
      (res) => `answered ${res.status}`,
      (err: Error & { cause?: { code?: string } }) => err.cause?.code,
    );
    expect(answered).toBe("ECONNREFUSED");
    expect(await a.exited).toBe(0);
    // The stream opened before the SIGTERM was kept to the end and told of the restart.
    await watcher.ended;
    expect(watcher.comments.at(-1)).toMatch(/server restarting/);
    const { view, history } = await finished(b, run, 10_000);
    expect(view.stopReason).toBe("complete");
    expect(toolResults(history)[0]?.content).toContain("slept");
  });

  it("kill -9 of the owner, then a decision on B before its lease expires: the run taken over announces approval.resolved before the tool starts", async () => {
    const lease = { RUN_LEASE_MS: "2000" };
    const [a, b] = await allStarted([instance("a", lease), instance("b", lease)]);
    upstream.enqueue({
      toolCalls: [
        { id: "call_x", name: "shell", arguments: JSON.stringify({ command: "sleep 1.5; echo x >> count.txt" }) },
      ],
    });
    const run = await startRun(a, { approval: { tools: { shell: "ask" } } });
    await waitFor(
      "the approval request",
      async () => ((await api(a.url, "GET", `/runs/${run.runId}/approvals`)).body?.items?.length ? true : null),
      10_000,
    );
    a.process.kill("SIGKILL");
    await a.exited;
    // Nobody executes the run: B writes the decision to the ledger.
    const decided = await api(b.url, "POST", `/runs/${run.runId}/approvals/call_x`, {
      decision: "approve",
      reason: "go",
    });
    expect(decided.status).toBe(200);
    upstream.enqueue({ text: "done" });
    const watcher = await openSse(`${b.url}/runs/${run.runId}/events`);
    await watcher.waitFor((e) => e.event === "tool.started");
    // While the approved tool executes, the run is shown as it is: running, nothing pending.
    const during = (await api(b.url, "GET", `/runs/${run.runId}`)).body.status;
    const pending = (await api(b.url, "GET", `/runs/${run.runId}/approvals`)).body.items.length;
    const { view } = await finished(b, run, 15_000);
    expect(view.stopReason).toBe("complete");
    const events = await (await openSse(`${b.url}/runs/${run.runId}/events`)).ended;
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    const kinds = events.map((e) => e.event);
    const requested = kinds.indexOf("approval.requested");
    expect({
      during,
      pending,
      resolvedAt: kinds.indexOf("approval.resolved"),
      startedAt: kinds.indexOf("tool.started"),
    }).toEqual({
      during: "running",
      pending: 0,
      resolvedAt: requested + 1,
      startedAt: requested + 2,
    });
    expect(events.find((e) => e.event === "approval.resolved")?.json).toMatchObject({
      toolCallId: "call_x",
      decision: "approve",
      reason: "go",
    });
    expect(kinds.filter((k) => k === "approval.resolved")).toHaveLength(1);
  });
});
