/**
 * A run's `maxTurns` is its turn budget: the model requests of the run (README). A request
 * still streaming when the server is killed (kill -9: an OOM kill, a node lost) was made and
 * paid for; the stats stored with the turn's step, once its stream ends, do not count it, but
 * its `turn.started` event (stored with its first events) does. A run with `maxTurns: 1` cut
 * mid-stream makes no second request after the restart, and ends `max_turns`: a reply that
 * kills the server each time cannot make the run request it again at every restart.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { openSse } from "../helpers/sse-client.js";
import { finishedRun } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "cut-request-max-turns" });

describe.each(["sqlite", "postgres"] as const)("a request cut by kill -9 (%s)", (backend) => {
  beforeEach(() => crash.prepare(backend));

  it("a model request cut by kill -9 counts against the run's maxTurns after the restart", async () => {
    const a = await crash.start();
    const before = crash.upstream.requests.length;
    // The reply streams a little and then hangs: the server is killed with the request under way.
    crash.upstream.enqueue({ text: ["partial ", "answer"], hang: "after-chunks", afterChunks: 2 });
    const session = await api(a.url, "POST", "/sessions", {});
    const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go", maxTurns: 1 });
    expect(run.status).toBe(201);
    // A delta is published once stored, and the turn's start with or before it.
    const watcher = await openSse(`${a.url}/runs/${run.body.id}/events`);
    await watcher.waitFor((e) => e.event === "text.delta");
    watcher.close();
    await crash.kill(a);

    crash.upstream.fallback = () => ({ text: "answered again" });
    const b = await crash.restart();
    const ended = await finishedRun(b, run.body.id);
    // One model request was all the run's budget: it made it (cut or not), and makes no other.
    expect({ modelRequests: crash.upstream.requests.length - before, modelCalls: ended.stats.modelCalls }).toEqual({
      modelRequests: 1,
      modelCalls: 1,
    });
    expect(ended.stopReason).toBe("max_turns");
    expect(ended.stopDetail).toContain("maxTurns");
  });
});
