/**
 * DELETE /sessions/{id} ends the session's queued runs and aborts its active run before deleting
 * them (README: "`DELETE /sessions/{id}` | delete it and its data (aborts an active run first)";
 * the session's queued runs are ended too). The clients still told of those ends (a `?wait=true`
 * start waiting for its queued run, an event stream of the active run, the session's webhook,
 * whose `run.finished` deliveries outlive the delete) read each run's `stopDetail` as:
 *
 *   "stopped before turn 1: the run was cancelled by a DELETE /runs/{id} request; start a new run to continue"
 *
 * Nobody sent DELETE /runs/{id}, and there is no session left to start a new run in. The brief
 * (law 9): "A run reports why it stopped in words a person can act on"; the server's own
 * recovery already says it right for a run it ends without its session ("because its session was
 * deleted", src/runs/recovery.ts). Expected: the detail names the session's delete, and gives no
 * advice to continue in the deleted session.
 *
 * Root cause: src/sessions/session-delete.ts endRuns calls manager.cancel(runId) with no `by`,
 * so cancelRun's default BY_DELETE ("by a DELETE /runs/{id} request") is stored. The same for
 * a run a restart holds for a slot (its end is written by the recovery, cancelled `by`). Over
 * PostgreSQL, with the run executing on another instance: test/cluster/a-cancel-taken-by-a-peer-says-who-asked.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { gate } from "../fakes/gate.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ backend: "sqlite" });
});
afterAll(async () => {
  await server.close();
});

describe("DELETE /sessions/{id} with an active and a queued run", () => {
  it("the ends its clients are told of say the session was deleted, not that a DELETE /runs/{id} request cancelled them", async () => {
    const held = gate();
    server.upstream.enqueue({ text: "never sent", gate: held.wait });
    const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
    const active = await server.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "active" } });
    expect(active.status).toBe(201);
    await until(
      async () => server.upstream.requests.length,
      (n) => n === 1,
      "the active run's model request",
    );
    const watcher = await openSse(`${server.url}/runs/${active.body.id}/events`);
    const waiting = server.request("POST", `/sessions/${sessionId}/runs?wait=true`, {
      body: { input: "queued", ifBusy: "enqueue" },
    });
    await until(
      async () => (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items.length,
      (n) => n === 2,
      "the queued run",
    );

    const deleted = await server.request("DELETE", `/sessions/${sessionId}`);
    expect(deleted.status).toBe(204);
    held.open();

    const queuedEnd = (await waiting).body.run;
    const activeEnd = (await watcher.ended).find((e) => e.event === "run.finished")?.json.run;
    const details = { queued: queuedEnd.stopDetail as string, active: activeEnd.stopDetail as string };
    expect({ queued: queuedEnd.stopReason, active: activeEnd.stopReason }).toEqual({
      queued: "aborted",
      active: "aborted",
    });
    for (const detail of Object.values(details)) {
      expect(detail).not.toContain("DELETE /runs/{id}");
      expect(detail).toMatch(/session was deleted|DELETE \/sessions\/\{id\}/);
      // No session is left to start a new run in.
      expect(detail).not.toContain("start a new run");
    }
  });
});

describe("DELETE /sessions/{id} of a run a restart holds for a slot", () => {
  it("the run's end says its session was deleted", async () => {
    const first = await startTestServer({ env: { MAX_CONCURRENT_RUNS: "2" } });
    let open: TestServer | null = first;
    onTestFinished(() => open?.close());
    const a = await runAwaitingApproval(first, { input: "a" });
    const b = await runAwaitingApproval(first, { input: "b" });
    await first.close({ keepDir: true, resume: true });
    const second = await startTestServer({
      dir: first.dir,
      upstream: first.upstream,
      env: { MAX_CONCURRENT_RUNS: "1" },
    });
    open = second;
    // One run resumed (executed here), the other held for a slot.
    await until(
      () => second.ctx.manager.liveCount,
      (n) => n === 1,
      "one run to be resumed",
    );
    const held = second.ctx.manager.executes(a.runId) ? b : a;
    expect(second.ctx.manager.executes(held.runId)).toBe(false);
    const watcher = await openSse(`${second.url}/runs/${held.runId}/events`);

    expect((await second.request("DELETE", `/sessions/${held.sessionId}`)).status).toBe(204);
    const end = (await watcher.ended).find((e) => e.event === "run.finished")?.json.run;
    expect(end.stopReason).toBe("aborted");
    expect(end.stopDetail).not.toContain("DELETE /runs/{id}");
    expect(end.stopDetail).toMatch(/session was deleted/);
    expect(end.stopDetail).not.toContain("start a new run");
  });
});
