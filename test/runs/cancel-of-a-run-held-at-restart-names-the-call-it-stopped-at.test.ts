/**
 * A run left awaiting approval by a restart, and held by start-up recovery for a free slot
 * (MAX_CONCURRENT_RUNS=1, two such runs over one SQLite file), is cancelled with
 * DELETE /runs/{id}. Its stop detail said "stopped after turn 1: ...", as if turn 1 had been
 * done, while the run stopped in turn 1 with its call still waiting for approval (the call gets
 * its "aborted before execution" result in the same end). The same cancel of the same state in
 * the run the restart resumed (executing here) says "stopped in turn 1 at tool call w1
 * (write_file): ...". product.md: "A run reports why it stopped in words a person can act on";
 * the stop detail names the step it stopped at. Expected: the held run's detail names the turn
 * and the call it stopped at, as the live run's does.
 *
 * (A left run's end gave a point only for a model request a restart cut: a run with calls
 * still open fell back to "after the run's last turn".)
 */
import { afterEach, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

it("a DELETE of a run held at restart for a free slot, awaiting approval, says it stopped in turn 1 at its pending call", async () => {
  const upstream = await startFakeUpstream();
  const first = await startTestServer({ upstream });
  const runs: { id: string; call: string }[] = [];
  for (const call of ["w1", "w2"]) {
    upstream.enqueue({
      toolCalls: [{ id: call, name: "write_file", arguments: JSON.stringify({ path: `${call}.txt`, content: "x" }) }],
    });
    const session = (await first.request("POST", "/sessions", { body: {} })).body;
    const run = (await first.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
    await until(
      async () => (await first.request("GET", `/runs/${run.id}`)).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    runs.push({ id: run.id, call });
  }
  // Left for the restart, which has room for one of them: the other is held for a slot.
  await first.close({ keepDir: true, resume: true });
  const server = await startTestServer({ upstream, dir: first.dir, env: { MAX_CONCURRENT_RUNS: "1" } });
  servers.push(server);
  onTestFinishedClose(upstream);
  const held = runs.find((r) => !server.ctx.manager.executes(r.id));
  const live = runs.find((r) => server.ctx.manager.executes(r.id));
  expect(held && live).toBeTruthy();
  if (!held || !live) return;

  // Cancelled while the other run holds the only slot: it is still held.
  const cancelled = await server.request("DELETE", `/runs/${held.id}`);
  expect(cancelled.status).toBe(202);
  const heldEnd = await finishedRun(server, held.id);
  expect(heldEnd.stopReason).toBe("aborted");
  const results = (await server.request("GET", `/sessions/${heldEnd.sessionId}/messages`)).body.items.filter(
    (m: { role: string }) => m.role === "tool",
  );
  expect(results.map((m: { metadata: { errorCode: string } }) => m.metadata.errorCode)).toEqual(["ABORTED"]);

  // The live one, for comparison: its detail names the call it stopped at.
  expect((await server.request("DELETE", `/runs/${live.id}`)).status).toBe(202);
  const liveEnd = await finishedRun(server, live.id);
  expect(liveEnd.stopDetail).toBe(
    `stopped in turn 1 at tool call ${live.call} (write_file): the run was cancelled by a DELETE /runs/{id} request; start a new run to continue`,
  );

  expect(heldEnd.stopDetail).toBe(
    `stopped in turn 1 at tool call ${held.call} (write_file): the run was cancelled by a DELETE /runs/{id} request; start a new run to continue`,
  );
});

function onTestFinishedClose(upstream: { close(): Promise<void> }) {
  servers.push({ close: () => upstream.close() } as unknown as TestServer);
}
