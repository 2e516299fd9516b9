/**
 * agent_approvals_pending is read, when scraped, from the approval waiters of the runs this
 * process executes. A call must leave it as soon as nothing waits for its decision any more,
 * even while its run goes on here (the approval timeout's denial), and when the run stops
 * waiting without a decision (a cancel, a shutdown that leaves the run for the next start).
 */
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Read in-process: a shutdown leaves the HTTP server to the test's close. */
const gauges = async (s: TestServer) => {
  const m = new Exposition((await s.ctx.metrics.exposition()).text);
  return { live: m.value("agent_runs_live"), approvalsPending: m.value("agent_approvals_pending") };
};

it("a call the approval timeout denies stops counting while its run goes on here", async () => {
  server = await startTestServer({ env: { APPROVAL_TIMEOUT_MS: "200" } });
  const s = server;
  const next = gate();
  s.upstream.enqueue(
    { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"a"}' }] },
    { text: "denied, then", gate: next.wait },
  );
  const session = await s.request("POST", "/sessions", { body: {} });
  const run = await s.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "write" } });
  expect(run.status).toBe(201);
  // The denial is stored and the loop has gone on to its next model request, which it waits for.
  await until(
    async () => (await s.ctx.store.toolCalls.get(run.body.id, "call_w"))?.decision ?? null,
    (decision) => decision === "deny",
    "the timeout's denial",
  );
  await until(
    () => s.upstream.requests.length,
    (n) => n === 2,
    "the model request after the denial",
  );
  expect(await gauges(s)).toEqual({ live: 1, approvalsPending: 0 });
  next.open();
  expect((await s.ctx.manager.waitForFinish(run.body.id)).stopReason).toBe("complete");
});

it("a cancelled run's call stops counting", async () => {
  server = await startTestServer();
  const s = server;
  const { runId } = await runAwaitingApproval(s);
  expect(await gauges(s)).toEqual({ live: 1, approvalsPending: 1 });
  expect((await s.request("DELETE", `/runs/${runId}`)).status).toBe(202);
  expect((await s.ctx.manager.waitForFinish(runId)).stopReason).toBe("aborted");
  expect(await gauges(s)).toEqual({ live: 0, approvalsPending: 0 });
});

it("a run a shutdown leaves for the next start no longer counts its call here", async () => {
  server = await startTestServer();
  const s = server;
  await runAwaitingApproval(s);
  expect(await gauges(s)).toEqual({ live: 1, approvalsPending: 1 });
  await s.ctx.manager.shutdown({ graceMs: 2000, resume: true });
  expect(await gauges(s)).toEqual({ live: 0, approvalsPending: 0 });
});
