/**
 * A `?wait=true` start whose run is queued (`ifBusy: "enqueue"` on a busy session) waits for
 * that run's end by following its events: a subscription on the hub, counted as one of the
 * run's watchers. Its client leaving ended nothing of it: the subscription (and the request,
 * with its body) stayed until the queued run had started and ended, however long the run ahead
 * of it took (an approval may wait 15 minutes). Now the wait ends when its client leaves
 * (src/http/client-gone.ts), its subscription with it, and the queued run goes on: a client
 * that merely disconnects never cancels a run.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

/** A `?wait=true` start on its own connection, left open until `destroy`. */
function openWait(server: TestServer, sessionId: string, body: object): { destroy: () => void } {
  const payload = JSON.stringify(body);
  const req = http.request(`${server.url}/sessions/${sessionId}/runs?wait=true`, {
    method: "POST",
    agent: false,
    headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
  });
  req.on("error", () => {});
  req.on("response", (res) => res.resume());
  req.end(payload);
  return { destroy: () => req.destroy() };
}

describe("a ?wait=true start of a queued run whose client leaves", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("stops following the run; the run still starts and ends", async () => {
    const { sessionId, runId } = await runAwaitingApproval(server);
    const wait = openWait(server, sessionId, { input: "then this", ifBusy: "enqueue" });
    const queued = await until(
      async () =>
        (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items.find(
          (r: { status: string }) => r.status === "queued",
        ),
      (run) => run !== undefined,
      "the run to be queued",
    );
    const watchers = () => server.ctx.hub.watcherCount(queued.id);
    await until(watchers, (n) => n === 1, "the wait to follow the queued run");
    wait.destroy();
    // Before the fix this timed out: the wait followed the run until its end.
    await until(watchers, (n) => n === 0, "the wait to stop following the run");
    expect((await server.request("GET", `/runs/${queued.id}`)).body.status).toBe("queued");

    // The run ahead ends, and the queued run (nobody waiting for it any more) runs to its end.
    server.upstream.enqueue({ text: "written" });
    server.upstream.enqueue({ text: "done too" });
    const decided = await server.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } });
    expect(decided.status).toBe(200);
    const ended = await until(
      async () => (await server.request("GET", `/runs/${queued.id}`)).body,
      (run) => run.status === "finished",
      "the queued run to finish",
    );
    expect(ended.stopReason).toBe("complete");
  }, 30_000);
});
