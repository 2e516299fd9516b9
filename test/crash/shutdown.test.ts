import { afterAll, beforeAll, expect, it } from "vitest";
import { assertValidHistory } from "../../src/agent/history.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { openSse } from "../helpers/sse-client.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream.close();
});

/** A run (shell allowed) whose shell `command` has started, watched from its first event. */
async function runAtShell(server: ChildServer, command: string) {
  upstream.enqueue({ toolCalls: [{ id: "call_s", name: "shell", arguments: JSON.stringify({ command }) }] });
  const session = (await api(server.url, "POST", "/sessions", { approval: { tools: { shell: "allow" } } })).body;
  const run = (await api(server.url, "POST", `/sessions/${session.id}/runs`, { input: "go" })).body;
  const watcher = await openSse(`${server.url}/runs/${run.id}/events`);
  await watcher.waitFor((e) => e.event === "tool.started");
  return { session, run, watcher };
}

/** SIGTERM, and the exit code is 0. */
async function stop(server: ChildServer) {
  server.process.kill("SIGTERM");
  expect(await server.exited).toBe(0);
}

/** Restarts on `dir`: the run has ended aborted and the history is valid; then stops. */
async function expectAbortedAfterRestart(opts: {
  dir: string;
  env?: Record<string, string>;
  runId: string;
  sessionId: string;
}) {
  const again = await startChildServer({ dir: opts.dir, upstreamURL: upstream.baseURL, env: opts.env });
  const view = await api(again.url, "GET", `/runs/${opts.runId}`);
  expect(view.body).toMatchObject({ status: "finished", stopReason: "aborted" });
  await validHistory(again, opts.sessionId);
  await stop(again);
}

/**
 * Watches a restarted run from the last event seen before the restart (after `act`, e.g. a
 * decision), checks the continuation has no gap and ends `complete`; returns the history.
 */
async function resumedToCompletion(
  server: ChildServer,
  { runId, sessionId, seen }: { runId: string; sessionId: string; seen: { id?: string }[] },
  act?: () => Promise<unknown>,
) {
  const lastSeen = seen.at(-1)?.id ?? "0";
  const continuation = await openSse(`${server.url}/runs/${runId}/events`, { headers: { "last-event-id": lastSeen } });
  await act?.();
  const rest = await continuation.ended;
  expect(Number(rest[0]?.id)).toBe(Number(lastSeen) + 1);
  expect(rest.at(-1)?.json.run.stopReason).toBe("complete");
  return validHistory(server, sessionId);
}

/** The session's history, which must pass the loop's own validation (law 4). */
async function validHistory(server: ChildServer, sessionId: string) {
  const history = (await api(server.url, "GET", `/sessions/${sessionId}/messages`)).body.items;
  expect(() => assertValidHistory(history)).not.toThrow();
  return history;
}

it("SIGTERM (twice) with ON_RESTART=abort settles live runs as aborted, ends their streams and exits 0 within 10 s", async () => {
  const dir = tempDir();
  try {
    const env = { ON_RESTART: "abort" };
    const server = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL, env });
    upstream.enqueue({ toolCalls: [{ id: "call_q", name: "shell", arguments: '{"command":"echo hi"}' }] });
    const session = (await api(server.url, "POST", "/sessions", {})).body;
    const run = (await api(server.url, "POST", `/sessions/${session.id}/runs`, { input: "go" })).body;
    const watcher = await openSse(`${server.url}/runs/${run.id}/events`);
    await watcher.waitFor((e) => e.event === "approval.requested");

    const started = Date.now();
    server.process.kill("SIGTERM");
    server.process.kill("SIGTERM");
    const events = await watcher.ended;
    expect(events.at(-1)?.event).toBe("run.finished");
    expect(events.at(-1)?.json.run.stopReason).toBe("aborted");
    expect(await server.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);

    await expectAbortedAfterRestart({ dir: dir.path, env, runId: run.id, sessionId: session.id });
  } finally {
    dir.cleanup();
  }
});

it("SIGTERM with ON_RESTART=resume leaves runs resumable: a pending approval is still pending after the restart", async () => {
  const dir = tempDir();
  try {
    const server = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    upstream.enqueue({
      toolCalls: [
        { id: "call_l", name: "list_files", arguments: "{}" },
        { id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"A"}' },
      ],
    });
    const session = (await api(server.url, "POST", "/sessions", {})).body;
    const run = (await api(server.url, "POST", `/sessions/${session.id}/runs`, { input: "go" })).body;
    const watcher = await openSse(`${server.url}/runs/${run.id}/events`);
    await watcher.waitFor((e) => e.event === "approval.requested");

    const started = Date.now();
    server.process.kill("SIGTERM");
    server.process.kill("SIGTERM");
    const before = await watcher.ended;
    // The stream closes with the server, without a run.finished: the run is not over. It is
    // ended properly, after a comment saying why, so clients reconnect with Last-Event-ID.
    expect(before.some((e) => e.event === "run.finished")).toBe(false);
    expect(watcher.complete()).toBe(true);
    expect(watcher.comments.at(-1)).toMatch(/server restarting/);
    expect(await server.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);

    upstream.enqueue({ text: "written" });
    const again = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    const pending = (await api(again.url, "GET", `/runs/${run.id}/approvals`)).body.items;
    expect(pending.map((p: { toolCallId: string }) => p.toolCallId)).toEqual(["call_w"]);
    // The resumed run shows its counts so far while it waits, not zeros.
    const waiting = (await api(again.url, "GET", `/runs/${run.id}`)).body;
    expect(waiting.stats).toMatchObject({ modelCalls: 1, toolCalls: 1, turns: 1 });
    const approve = async () =>
      expect((await api(again.url, "POST", `/runs/${run.id}/approvals/call_w`, { decision: "approve" })).status).toBe(
        200,
      );
    const history = await resumedToCompletion(again, { runId: run.id, sessionId: session.id, seen: before }, approve);
    expect(history.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "tool", "assistant"]);
    // The turn interrupted by the restart keeps a trace of both its tools.
    const steps = (await api(again.url, "GET", `/runs/${run.id}/steps`)).body.items;
    expect(steps.map((step: { tools: { toolCallId: string; status: string }[] }) => step.tools)).toEqual([
      [
        expect.objectContaining({ toolCallId: "call_l", tool: "list_files", status: "ok" }),
        expect.objectContaining({ toolCallId: "call_w", tool: "write_file", status: "ok" }),
      ],
      [],
    ]);
    await stop(again);
  } finally {
    dir.cleanup();
  }
});

it("SIGTERM with ON_RESTART=resume lets a running tool finish: its real result is kept, the restart continues", async () => {
  const dir = tempDir();
  try {
    const server = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    const { session, run, watcher } = await runAtShell(server, "sleep 1; echo finished-normally");
    server.process.kill("SIGTERM");
    // While the tool finishes, the server answers but takes no new work, and says so: asked until
    // it has taken the signal (a loaded server could take it more than a fixed 200 ms later).
    const ready = await until(
      () => api(server.url, "GET", "/readyz"),
      (answer) => answer.status !== 200,
      "the server to take the SIGTERM",
    );
    expect(ready.status).toBe(503);
    expect(ready.body.checks.accepting).toEqual({ ok: false, message: "the server is shutting down" });
    const refused = await api(server.url, "POST", "/sessions", {});
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("SHUTTING_DOWN");
    expect(await server.exited).toBe(0);
    const seen = await watcher.ended;
    expect(seen.some((e) => e.event === "run.finished")).toBe(false);

    upstream.enqueue({ text: "noted" });
    const again = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    const history = await resumedToCompletion(again, { runId: run.id, sessionId: session.id, seen });
    const result = history.find((m: { role: string }) => m.role === "tool");
    expect(result).toMatchObject({ toolCallId: "call_s", isError: false });
    expect(result.content).toContain("finished-normally");
    expect(history.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    await stop(again);
  } finally {
    dir.cleanup();
  }
});

// A turn whose last tool finished during a graceful shutdown used to lose that tool from its
// step trace for good (the full trace was queued for a later write, dropped at the seal, and
// the resume re-reported the step only when calls were pending): the step stayed model-only
// while the history and stats.toolCalls showed the tool. Now the resumed turn's step lists it.
it("SIGTERM (ON_RESTART=resume) while a turn's last tool runs: after the restart that turn's step still lists the tool", async () => {
  const dir = tempDir();
  try {
    const server = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    const { session, run, watcher } = await runAtShell(server, "sleep 0.5; echo done");
    await stop(server);
    const seen = await watcher.ended;

    upstream.enqueue({ text: "finished" });
    const again = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    const history = await resumedToCompletion(again, { runId: run.id, sessionId: session.id, seen });
    expect(history.find((m: { role: string }) => m.role === "tool")).toMatchObject({
      toolCallId: "call_s",
      isError: false,
    });
    expect((await api(again.url, "GET", `/runs/${run.id}`)).body.stats.toolCalls).toBe(1);
    const steps = (await api(again.url, "GET", `/runs/${run.id}/steps`)).body.items;
    expect(steps.map((s: { tools: { toolCallId: string }[] }) => s.tools.map((t) => t.toolCallId))).toEqual([
      ["call_s"],
      [],
    ]);
    await stop(again);
  } finally {
    dir.cleanup();
  }
});

// A tool that finished during a graceful shutdown used to leave its running time out of the
// run's durationMs (its result was stored without the run's stats, and a resumed run counts on
// from the stored duration). Now the run's duration covers the tool's own duration.
it("SIGTERM (ON_RESTART=resume) while a tool runs: the run's durationMs still covers the tool's own duration", async () => {
  const dir = tempDir();
  try {
    const server = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    const { session, run, watcher } = await runAtShell(server, "sleep 1; echo done");
    await stop(server);
    const seen = await watcher.ended;

    upstream.enqueue({ text: "finished" });
    const again = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    const history = await resumedToCompletion(again, { runId: run.id, sessionId: session.id, seen });
    const result = history.find((m: { role: string }) => m.role === "tool");
    expect(result).toMatchObject({ toolCallId: "call_s", isError: false });
    expect(result.metadata.durationMs).toBeGreaterThanOrEqual(1000);
    const finished = (await api(again.url, "GET", `/runs/${run.id}`)).body;
    expect(finished.stats.durationMs).toBeGreaterThanOrEqual(result.metadata.durationMs);
    await stop(again);
  } finally {
    dir.cleanup();
  }
});

it("a DELETE accepted while the server shuts down is kept: the restart ends the run aborted", async () => {
  const dir = tempDir();
  try {
    const server = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    const { session, run, watcher } = await runAtShell(server, "sleep 2");
    server.process.kill("SIGTERM");
    // The tool still runs (the server lets it finish), and requests are still answered.
    const cancelled = await api(server.url, "DELETE", `/runs/${run.id}`);
    expect(cancelled.status).toBe(202);
    expect(await server.exited).toBe(0);
    watcher.close();

    await expectAbortedAfterRestart({ dir: dir.path, runId: run.id, sessionId: session.id });
  } finally {
    dir.cleanup();
  }
});

it("a second server on the same database refuses to start instead of taking over live runs", async () => {
  const dir = tempDir();
  try {
    const first = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL });
    await expect(startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL })).rejects.toThrow(
      /in use by another process/,
    );
    expect((await api(first.url, "GET", "/healthz")).status).toBe(200);
    first.process.kill("SIGTERM");
    expect(await first.exited).toBe(0);
  } finally {
    dir.cleanup();
  }
});

it("bad configuration stops the server at start with exit code 2 and a message naming the variable", async () => {
  const dir = tempDir();
  try {
    const failure = startChildServer({
      dir: dir.path,
      upstreamURL: "http://127.0.0.1:9/v1/chat/completions",
    });
    await expect(failure).rejects.toThrow(/OPENAI_BASE_URL[^\n]*chat\/completions/);
    const bad = startChildServer({
      dir: dir.path,
      upstreamURL: upstream.baseURL,
      env: { MAX_CONCURRENT_RUNS: "lots" },
    });
    await expect(bad).rejects.toThrow(/MAX_CONCURRENT_RUNS/);
  } finally {
    dir.cleanup();
  }
});
