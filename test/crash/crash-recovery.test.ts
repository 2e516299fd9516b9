import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { assertValidHistory } from "../../src/agent/history.js";
import type { AgentMessage } from "../../src/agent/messages.js";
import { api, type ChildServer } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { hostPids } from "../helpers/processes.js";
import { openSse, type SseEvent, type SseStream } from "../helpers/sse-client.js";

const crash = crashHarness({ instanceId: "crash-test" });
const never = new Promise<void>(() => {});
const start = (env: Record<string, string> = {}) => crash.start(env);
const restart = (env: Record<string, string> = {}) => crash.restart({ env });
const kill = (child: ChildServer) => crash.kill(child);

/**
 * Starts a session and a run, with a watcher on its events unless the server is about
 * to kill itself at a failpoint (a watcher could then race the crash).
 */
async function startRun(server: ChildServer, session: Record<string, unknown> = {}, { watch = true } = {}) {
  const created = await api(server.url, "POST", "/sessions", session);
  expect(created.status).toBe(201);
  const run = await api(server.url, "POST", `/sessions/${created.body.id}/runs`, { input: "do the thing" });
  expect(run.status).toBe(201);
  const watcher = watch ? await openSse(`${server.url}/runs/${run.body.id}/events`) : null;
  return { sessionId: created.body.id as string, runId: run.body.id as string, watcher };
}

const workspaceFile = (sessionId: string, name: string) => join(crash.dir, "workspaces", sessionId, name);
const lines = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0);

/**
 * After the restart: follows the run from the last event the first watcher saw to
 * its end, and checks what a crash may never do.
 */
async function settleAndCheck(
  server: { url: string },
  run: { sessionId: string; runId: string; watcher: SseStream | null },
  expectedStop: "complete" | "aborted",
) {
  const before = run.watcher?.events ?? [];
  run.watcher?.close();
  const lastSeen = before.at(-1)?.id ?? "0";
  const after = await openSse(`${server.url}/runs/${run.runId}/events`, { headers: { "last-event-id": lastSeen } });
  const continuation = await after.ended;
  // The run's end is seen once: after the restart, or (a run whose cancel raced the crash may
  // have ended before it) already by the first watcher, and then nothing follows it.
  const endedBefore = before.at(-1)?.event === "run.finished";
  const end = endedBefore ? before.at(-1) : continuation.at(-1);
  expect(end?.event, `the stream after the restart: HTTP ${after.status}, ${continuation.length} events`).toBe(
    "run.finished",
  );
  expect(end?.json.run.stopReason).toBe(expectedStop);
  if (endedBefore) expect(continuation).toEqual([]);
  // The continuation starts right after what was seen: no gap, no duplicate.
  else expect(Number(continuation[0]?.id)).toBe(Number(lastSeen) + 1);
  const all = await (await openSse(`${server.url}/runs/${run.runId}/events`)).ended;
  expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));

  const history = (await api(server.url, "GET", `/sessions/${run.sessionId}/messages?limit=200`)).body
    .items as (AgentMessage & {
    seq: number;
  })[];
  // Every message a client saw in a `message` event is in the history.
  const seen = [...before, ...continuation].filter((e: SseEvent) => e.event === "message").map((e) => e.json.message);
  for (const message of seen) expect(history).toContainEqual(message);
  // Every tool call has exactly one result.
  expect(() => assertValidHistory(history)).not.toThrow();
  const run2 = await api(server.url, "GET", `/runs/${run.runId}`);
  expect(run2.body.status).toBe("finished");
  // Every committed model reply has its step (at least the model's part, written with it),
  // so the run's token counts survive the crash.
  const steps = (await api(server.url, "GET", `/runs/${run.runId}/steps`)).body.items as {
    turn: number;
    model: { usage: { inputTokens: number } | null };
  }[];
  const replies = history.filter((m) => m.role === "assistant" && (m as { runId?: string }).runId === run.runId);
  expect(steps.length).toBeGreaterThanOrEqual(replies.length);
  expect(new Set(steps.map((s) => s.turn)).size).toBe(steps.length);
  expect(run2.body.stats.inputTokens).toBe(steps.reduce((sum, s) => sum + (s.model.usage?.inputTokens ?? 0), 0));
  return history;
}

describe.each(["sqlite", "postgres"] as const)("kill -9 at each point, then restart (%s)", (backend) => {
  beforeEach(() => crash.prepare(backend));

  it("mid model stream: nothing partial is stored and the resumed run asks again and completes", async () => {
    const a = await start();
    crash.upstream.enqueue({ text: ["partial ", "thoughts"], gate: never });
    const run = await startRun(a);
    await run.watcher?.waitFor((e) => e.event === "text.delta");
    await kill(a);

    crash.upstream.enqueue({ text: "the final answer" });
    const b = await restart();
    const history = await settleAndCheck(b, run, "complete");
    expect(history.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(history[1]?.content).toBe("the final answer");
    expect(JSON.stringify(history)).not.toContain("partial");
  });

  // A decision posted between the restarted server's listen and its recovery of the run waits
  // for the recovery (over PostgreSQL that window is wide enough for this test to land in it):
  // the restart is a process, answering from its listen on, not `restart`.
  it("awaiting approval: the request is pending again after the restart and a decision continues the run", async () => {
    const a = await start();
    crash.upstream.enqueue({
      toolCalls: [{ id: "call_a", name: "shell", arguments: '{"command":"echo x >> count.txt"}' }],
    });
    const run = await startRun(a);
    await run.watcher?.waitFor((e) => e.event === "approval.requested");
    await kill(a);

    crash.upstream.enqueue({ text: "done" });
    const b = await start();
    const pending = await api(b.url, "GET", `/runs/${run.runId}/approvals`);
    expect(pending.body.items.map((p: { toolCallId: string }) => p.toolCallId)).toEqual(["call_a"]);
    const decision = await api(b.url, "POST", `/runs/${run.runId}/approvals/call_a`, { decision: "approve" });
    expect(decision.status).toBe(200);
    const history = await settleAndCheck(b, run, "complete");
    expect(lines(workspaceFile(run.sessionId, "count.txt"))).toBe(1);
    expect(history.find((m) => m.role === "tool")?.isError).toBe(false);
  });

  it.each([
    ["off", "sleep 30.411"],
    ["bwrap", "sleep 30.412"],
  ])(
    "mid tool (SHELL_SANDBOX=%s): the command dies with the server, gets an INTERRUPTED result and is never run again",
    async (sandbox, sleep) => {
      const a = await start({ SHELL_SANDBOX: sandbox });
      crash.upstream.enqueue({
        toolCalls: [
          {
            id: "call_t",
            name: "shell",
            arguments: JSON.stringify({ command: `echo x >> count.txt; echo up > up.txt; ${sleep}` }),
          },
        ],
      });
      const run = await startRun(a, { approval: { tools: { shell: "allow" } } });
      await run.watcher?.waitFor((e) => e.event === "tool.started");
      const argv = new RegExp(`^${sleep.replace(".", "\\.")}$`);
      while (hostPids(argv).length === 0) await new Promise((r) => setTimeout(r, 20));
      await kill(a);
      // The command dies with the server (its watchdog sees the server gone; a sandbox also
      // dies with bwrap). Zombies do not count: the orphans' new parent may be slow to reap them.
      const deadline = Date.now() + 5000;
      while (hostPids(argv).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const alive = hostPids(argv);
      for (const pid of alive) process.kill(pid, "SIGKILL");
      expect(alive).toEqual([]);

      crash.upstream.enqueue({ text: "noted" });
      const b = await restart();
      const history = await settleAndCheck(b, run, "complete");
      const result = history.find((m) => m.role === "tool");
      expect(result).toMatchObject({ isError: true, toolCallId: "call_t" });
      expect((result as { metadata: { errorCode: string } }).metadata.errorCode).toBe("INTERRUPTED");
      expect(lines(workspaceFile(run.sessionId, "count.txt"))).toBe(1);
    },
  );

  it("between the assistant commit and the first tool: the resumed run executes the call once", async () => {
    const a = await start({ AGENT_FAILPOINTS: "after-assistant-commit" });
    crash.upstream.enqueue({
      toolCalls: [{ id: "call_b", name: "shell", arguments: '{"command":"echo x >> count.txt"}' }],
    });
    const run = await startRun(a, { approval: { tools: { shell: "allow" } } }, { watch: false });
    expect(await a.exited).toBe("SIGKILL");
    expect(lines(workspaceFile(run.sessionId, "count.txt"))).toBe(0);

    crash.upstream.enqueue({ text: "done" });
    const b = await restart();
    const history = await settleAndCheck(b, run, "complete");
    expect(history.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(lines(workspaceFile(run.sessionId, "count.txt"))).toBe(1);
  });

  it("right after a tool result commit: the finished tool is not run again, the next one runs once", async () => {
    const a = await start({ AGENT_FAILPOINTS: "after-tool-result-commit" });
    crash.upstream.enqueue({
      toolCalls: [
        { id: "call_1", name: "shell", arguments: '{"command":"echo x >> one.txt"}' },
        { id: "call_2", name: "shell", arguments: '{"command":"echo y >> two.txt"}' },
      ],
    });
    const run = await startRun(a, { approval: { tools: { shell: "allow" } } }, { watch: false });
    expect(await a.exited).toBe("SIGKILL");
    expect(lines(workspaceFile(run.sessionId, "one.txt"))).toBe(1);
    expect(lines(workspaceFile(run.sessionId, "two.txt"))).toBe(0);

    crash.upstream.enqueue({ text: "both done" });
    const b = await restart();
    await settleAndCheck(b, run, "complete");
    expect(lines(workspaceFile(run.sessionId, "one.txt"))).toBe(1);
    expect(lines(workspaceFile(run.sessionId, "two.txt"))).toBe(1);
  });

  it("ON_RESTART=abort closes every open call and ends the run aborted", async () => {
    const a = await start();
    crash.upstream.enqueue({
      toolCalls: [
        { id: "call_x", name: "shell", arguments: '{"command":"echo x >> count.txt"}' },
        { id: "call_y", name: "list_files", arguments: "{}" },
      ],
    });
    const run = await startRun(a);
    await run.watcher?.waitFor((e) => e.event === "approval.requested");
    await kill(a);

    const b = await restart({ ON_RESTART: "abort" });
    const history = await settleAndCheck(b, run, "aborted");
    const results = history.filter((m) => m.role === "tool") as Extract<AgentMessage, { role: "tool" }>[];
    expect(results.map((m) => [m.toolCallId, m.metadata.errorCode])).toEqual([
      ["call_x", "ABORTED"],
      ["call_y", "ABORTED"],
    ]);
    expect(lines(workspaceFile(run.sessionId, "count.txt"))).toBe(0);
    expect((await api(b.url, "GET", `/runs/${run.runId}/approvals`)).body.items).toEqual([]);
  });

  it("a run cancelled just before the crash is not continued after the restart: it ends aborted", async () => {
    const a = await start({ AGENT_FAILPOINTS: "after-cancel-request" });
    crash.upstream.enqueue({
      toolCalls: [{ id: "call_c", name: "shell", arguments: '{"command":"echo x >> count.txt"}' }],
    });
    const run = await startRun(a);
    await run.watcher?.waitFor((e) => e.event === "approval.requested");
    await fetch(`${a.url}/runs/${run.runId}`, { method: "DELETE" }).catch(() => {});
    expect(await a.exited).toBe("SIGKILL");

    const b = await restart();
    const history = await settleAndCheck(b, run, "aborted");
    expect(history.find((m) => m.role === "tool")).toMatchObject({ toolCallId: "call_c", isError: true });
    expect(lines(workspaceFile(run.sessionId, "count.txt"))).toBe(0);
    crash.upstream.assertComplete();
  });
});
