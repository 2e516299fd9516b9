import { afterEach, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function takenOverWhileAwaitingApproval(current: TestServer): Promise<string> {
  const { runId } = await runAwaitingApproval(current);
  // Another instance takes the run over; this one has not renewed (nor noticed) yet.
  const [claimed] = await current.ctx.store.leases.claim({
    owner: "inst-other",
    ttlMs: 60_000,
    limit: 10,
    scope: "all",
  });
  expect(claimed?.record.id).toBe(runId);
  return runId;
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
