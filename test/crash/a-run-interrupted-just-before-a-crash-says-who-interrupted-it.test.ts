/**
 * A run cancelled by an `ifBusy: "interrupt"` start on the instance executing it, whose
 * instance died before storing the run's end, was ended at the restart (or by the peer taking
 * it over, over PostgreSQL) with "the run was cancelled by a DELETE /runs/{id} request before
 * the server restarted": a cancel of a run executing where it is asked wrote only its status,
 * not who asked (a cancel asked elsewhere stores it with the request: runs.cancel_requested_by).
 * Now the status write stores it too, and the restart's end names the interrupting start.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { openSse } from "../helpers/sse-client.js";
import { until } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "interrupted-before-a-crash" });

describe.each(["sqlite", "postgres"] as const)("an interrupted run left by a crash (%s)", (backend) => {
  beforeEach(() => crash.prepare(backend));

  it("is ended by the restart with a stop detail naming the interrupting start, not a DELETE", async () => {
    const a = await crash.start({ AGENT_FAILPOINTS: "after-cancel-request" });
    crash.upstream.enqueue({
      toolCalls: [{ id: "call_c", name: "shell", arguments: '{"command":"echo x >> count.txt"}' }],
    });
    const session = await api(a.url, "POST", "/sessions", {});
    expect(session.status).toBe(201);
    const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "do the thing" });
    expect(run.status).toBe(201);
    const watcher = await openSse(`${a.url}/runs/${run.body.id}/events`);
    await watcher.waitFor((e) => e.event === "approval.requested");
    watcher.close();

    // The interrupting start cancels the run here (it executes here); the process dies right
    // after the cancel is recorded, before the run's end is stored.
    await fetch(`${a.url}/sessions/${session.body.id}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "do something else", ifBusy: "interrupt" }),
    }).catch(() => {});
    expect(await a.exited).toBe("SIGKILL");

    const b = await crash.restart();
    const ended = await until(
      () => api(b.url, "GET", `/runs/${run.body.id}`),
      (r) => r.body.status === "finished",
      "the interrupted run's end after the restart",
    );
    expect(ended.body.stopReason).toBe("aborted");
    expect(ended.body.stopDetail).not.toContain("DELETE /runs/{id}");
    expect(ended.body.stopDetail).toContain('ifBusy "interrupt"');
  });
});
