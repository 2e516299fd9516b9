import { afterEach, expect, it } from "vitest";
import { newRunRecord } from "../../src/runs/admission.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("the reaper starts a queue left by a lost instance only within MAX_CONCURRENT_RUNS", async () => {
  server = await startTestServer({ backend: "postgres", env: { MAX_CONCURRENT_RUNS: "1" } });
  const current = server;
  const { store, manager } = current.ctx;
  const run = { id: (await runAwaitingApproval(current)).runId };
  current.upstream.enqueue({ text: "written" }, { text: "the queued run's answer" });
  // A run queued in another session whose run ahead ended on an instance lost before it started it.
  const idle = (await current.request("POST", "/sessions", { body: {} })).body;
  const queued = newRunRecord(
    { session: (await store.sessions.get(idle.id))!, input: "next", maxTurns: 5 },
    { status: "queued" },
  );
  await store.runs.create(queued, [{ type: "run.queued", runId: queued.id, seq: 1, at: queued.createdAt }]);

  // The one slot is taken: the reaper leaves the queue for a peer with room (or for later).
  await manager.ownership.reap();
  expect(manager.liveCount).toBe(1);
  expect((await store.runs.get(queued.id))?.status).toBe("queued");

  // Once the slot is free, a pass (about every second) starts it.
  await current.request("POST", `/runs/${run.id}/approvals/call_w`, { body: { decision: "approve" } });
  await finishedRun(current, run.id);
  expect((await finishedRun(current, queued.id)).stopReason).toBe("complete");
});
