/**
 * A kill -9 right after a turn's last tool result was committed, or while its tool ran (recovery
 * then stores an INTERRUPTED result), used to leave that turn's step model-only for good: its
 * full trace was queued for a later write and lost with the process, and the resume re-reported
 * the step only when calls were still pending. Now the resumed run's step of that turn lists
 * every call that has a result.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { openSse } from "../helpers/sse-client.js";

const crash = crashHarness({ instanceId: "resumed-step-trace" });

interface Step {
  turn: number;
  tools: { toolCallId: string; status: string; errorCode: string | null }[];
}

describe("step traces after kill -9 (sqlite)", () => {
  beforeEach(() => crash.prepare("sqlite"));

  it("a turn whose only tool result was committed just before the crash keeps that tool in its step", async () => {
    const a = await crash.start({ AGENT_FAILPOINTS: "after-tool-result-commit" });
    crash.upstream.enqueue({
      toolCalls: [{ id: "call_1", name: "shell", arguments: '{"command":"echo x >> one.txt"}' }],
    });
    const session = await api(a.url, "POST", "/sessions", { approval: { tools: { shell: "allow" } } });
    const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" });
    expect(run.status).toBe(201);
    expect(await a.exited).toBe("SIGKILL");

    crash.upstream.enqueue({ text: "done" });
    const b = await crash.restart();
    await (await openSse(`${b.url}/runs/${run.body.id}/events`)).ended;
    const view = await api(b.url, "GET", `/runs/${run.body.id}`);
    expect(view.body.stopReason).toBe("complete");
    expect(view.body.stats.toolCalls).toBe(1);
    const steps = (await api(b.url, "GET", `/runs/${run.body.id}/steps`)).body.items as Step[];
    expect(steps.map((s) => s.turn)).toEqual([1, 2]);
    expect(steps[0]?.tools.map((t) => [t.toolCallId, t.status])).toEqual([["call_1", "ok"]]);
  });

  it("a tool interrupted by the crash appears in its turn's step with INTERRUPTED", async () => {
    const a = await crash.start();
    crash.upstream.enqueue({
      toolCalls: [{ id: "call_t", name: "shell", arguments: '{"command":"sleep 30.713"}' }],
    });
    const session = await api(a.url, "POST", "/sessions", { approval: { tools: { shell: "allow" } } });
    const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" });
    const watcher = await openSse(`${a.url}/runs/${run.body.id}/events`);
    await watcher.waitFor((e) => e.event === "tool.started");
    watcher.close();
    await crash.kill(a);

    crash.upstream.enqueue({ text: "noted" });
    const b = await crash.restart();
    await (await openSse(`${b.url}/runs/${run.body.id}/events`)).ended;
    const messages = (await api(b.url, "GET", `/sessions/${session.body.id}/messages`)).body.items;
    expect(messages.find((m: { role: string }) => m.role === "tool").metadata.errorCode).toBe("INTERRUPTED");
    const steps = (await api(b.url, "GET", `/runs/${run.body.id}/steps`)).body.items as Step[];
    expect(steps.map((s) => s.turn)).toEqual([1, 2]);
    expect(steps[0]?.tools.map((t) => [t.toolCallId, t.errorCode])).toEqual([["call_t", "INTERRUPTED"]]);
  });
});
