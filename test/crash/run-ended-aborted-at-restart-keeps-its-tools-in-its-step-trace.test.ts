/**
 * GET /runs/{id}/steps: "per-step trace: ... each tool result's status, duration, size,
 * truncation" (product.md). A turn's full step (its tools) is a deferred write that goes with
 * the run's next write; a kill -9 while the tool ran loses it, and recovery then stores the
 * call's INTERRUPTED result. test/crash/resumed-step-trace.test.ts pins that a resumed run's
 * loop reports the step again with every answered call.
 *
 * The same kill, but the run is not resumed: the server restarts with ON_RESTART=abort (so
 * too a run with a DELETE answered 202 before the crash, or one a peer ends over PostgreSQL).
 * Before, the run ended `aborted` with the INTERRUPTED result in its history and
 * `stats.toolCalls` counting the call, but its step trace said turn 1 executed no tool, for
 * good: the end of a left run (finishRun) wrote the closing results and the end only. Now that
 * write stores the step again with every call that has a result (see completedStep).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { openSse } from "../helpers/sse-client.js";
import { finishedRun } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "review-dur-abort-steps" });

interface Step {
  turn: number;
  tools: { toolCallId: string; status: string; errorCode: string | null }[];
}

describe("step traces of a run ended aborted after kill -9 (sqlite)", () => {
  beforeEach(() => crash.prepare("sqlite"));

  it("a tool interrupted by the crash appears in its turn's step with INTERRUPTED", async () => {
    const a = await crash.start();
    crash.upstream.enqueue({
      toolCalls: [{ id: "call_t", name: "shell", arguments: '{"command":"sleep 30.953"}' }],
    });
    const session = await api(a.url, "POST", "/sessions", { approval: { tools: { shell: "allow" } } });
    const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" });
    const watcher = await openSse(`${a.url}/runs/${run.body.id}/events`);
    await watcher.waitFor((e) => e.event === "tool.started");
    watcher.close();
    await crash.kill(a);

    const b = await crash.restart({ env: { ON_RESTART: "abort" } });
    const end = await finishedRun(b, run.body.id);
    expect(end.stopReason).toBe("aborted");
    const messages = (await api(b.url, "GET", `/sessions/${session.body.id}/messages`)).body.items;
    expect(messages.find((m: { role: string }) => m.role === "tool").metadata.errorCode).toBe("INTERRUPTED");
    const steps = (await api(b.url, "GET", `/runs/${run.body.id}/steps`)).body.items as Step[];
    expect(steps.map((s) => s.turn)).toEqual([1]);
    expect(end.stats.toolCalls).toBe(1);
    expect(steps[0]?.tools.map((t) => [t.toolCallId, t.errorCode])).toEqual([["call_t", "INTERRUPTED"]]);
  });
});
