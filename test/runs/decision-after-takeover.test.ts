import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function takenOverWhileAwaitingApproval(current: TestServer): Promise<string> {
  current.upstream.enqueue({
    toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
  });
  const session = (await current.request("POST", "/sessions", { body: {} })).body;
  const run = (await current.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
  await until(
    async () => (await current.request("GET", `/runs/${run.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  // Another instance takes the run over; this one has not renewed (nor noticed) yet.
  const [claimed] = await current.ctx.store.leases.claim({
    owner: "inst-other",
    ttlMs: 60_000,
    limit: 10,
    scope: "all",
  });
  expect(claimed?.record.id).toBe(run.id);
  return run.id;
}

it("a decision posted to an instance whose run was taken over before it noticed goes to the ledger, for the new owner", async () => {
  server = await startTestServer({ backend: "postgres" });
  const current = server;
  const runId = await takenOverWhileAwaitingApproval(current);
  const decided = await current.request("POST", `/runs/${runId}/approvals/call_w`, {
    body: { decision: "approve", reason: "ok" },
  });
  expect(decided.status).toBe(200);
  expect(decided.body).toMatchObject({ toolCallId: "call_w", decisionReason: "ok" });
  // In the ledger, where the instance that holds the run now finds it.
  expect((await current.ctx.store.toolCalls.get(runId, "call_w"))?.decision).toBe("approve");
  // Nothing of the run is executed here any more.
  await until(
    () => current.ctx.manager.executes(runId),
    (executes) => !executes,
    "the run to be given up here",
  );
});

it("a DELETE posted to an instance whose run was taken over before it noticed is stored, for the new owner", async () => {
  server = await startTestServer({ backend: "postgres" });
  const current = server;
  const runId = await takenOverWhileAwaitingApproval(current);
  const cancelled = await current.request("DELETE", `/runs/${runId}`);
  expect(cancelled.status).toBe(202);
  // Stored, where the instance that holds the run now acts on it.
  expect(await current.ctx.store.runs.cancelRequested([runId])).toEqual([runId]);
  await until(
    () => current.ctx.manager.executes(runId),
    (executes) => !executes,
    "the run to be given up here",
  );
});
