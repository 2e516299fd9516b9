/**
 * DELETE /runs/{id} taken by the instance executing the run (A) while its run awaits approval,
 * and an approval for that call posted to another instance (B) while A's writes of the cancel
 * are on their way. The ledger arbitrates: whichever of A's close of the call (aborted before
 * execution) and B's decision lands first wins, and the answers, the ledger and the run's events
 * agree on it. B's decision first: its 200 is true, and A announces it (`approval.resolved`, in
 * the write of the call's aborted result and before it); the tool still never runs. A's close
 * first: B's decision is refused (409 APPROVAL_NOT_PENDING) and never written. The decision
 * used to be stored and answered 200 while the run's events never announced it.
 */
import { afterEach, expect, it, onTestFinished } from "vitest";
import type { RunChange } from "../../src/store/store.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close();
});

/** The two outcomes in which the answer, the ledger and the events agree. */
const CONSISTENT = [
  { status: 200, code: undefined, decision: "approve", resolved: 1 },
  { status: 409, code: "APPROVAL_NOT_PENDING", decision: null, resolved: 0 },
];

/**
 * A (executing the run, its writes held from the first one `holdFrom` picks until the approval
 * is answered) and B over one database; A's run awaits approval of `call_w`. DELETE goes to A,
 * the approval to B once A's writes are held. Every batch A commits is kept as its event types.
 */
async function deleteOnOwnerApproveOnPeer(holdFrom: (changes: readonly RunChange[]) => boolean) {
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());
  let holding = false;
  let release!: () => void;
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  let arrive!: () => void;
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  const batches: string[][] = [];
  const a = await startTestServer({
    pgUrl: database.url,
    wrapStore: (store) => ({
      ...store,
      commitRun: async (runId, changes, events, fence) => {
        if (holding && holdFrom(changes)) {
          arrive();
          await opened;
        }
        const stored = await store.commitRun(runId, changes, events, fence);
        batches.push(events.map((event) => event.type));
        return stored;
      },
    }),
  });
  servers.push(a);
  const b = await startTestServer({ pgUrl: database.url, upstream: a.upstream });
  servers.push(b);

  const { runId } = await runAwaitingApproval(a);
  holding = true;
  const cancelling = a.request("DELETE", `/runs/${runId}`);
  await arrived;
  const approved = await b.request("POST", `/runs/${runId}/approvals/call_w`, {
    body: { decision: "approve", reason: "fine by B" },
  });
  const ledger = await b.ctx.store.toolCalls.get(runId, "call_w");
  release();
  expect((await cancelling).status).toBe(202);
  const finished = await until(
    async () => (await b.request("GET", `/runs/${runId}`)).body,
    (run) => run.status === "finished",
    "the run to finish",
  );
  expect(finished.stopReason).toBe("aborted");
  const events = await (await openSse(`${b.url}/runs/${runId}/events`)).ended;
  const outcome = {
    status: approved.status,
    code: approved.body.error?.code,
    decision: ledger?.decision ?? null,
    resolved: events.filter((e) => e.event === "approval.resolved").length,
  };
  expect(CONSISTENT).toContainEqual(outcome);
  // Approved or not, the call was closed before its tool could start.
  expect(events.map((e) => e.event)).not.toContain("tool.started");
  expect((await b.ctx.store.toolCalls.get(runId, "call_w"))?.startedAt).toBeNull();
  return { outcome, events, batches };
}

it("DELETE taken by the owner A, approve on B landing before A closes the call: 200, and A announces the approval before the aborted result", async () => {
  // Every write of A's waits: B's decision lands before A's close of the call.
  const { outcome, events, batches } = await deleteOnOwnerApproveOnPeer(() => true);
  expect(outcome).toEqual({ status: 200, code: undefined, decision: "approve", resolved: 1 });
  const from = events.findIndex((e) => e.event === "approval.requested");
  expect(
    events.slice(from).map((e) => [e.event, e.json.decision ?? e.json.message?.metadata?.errorCode ?? null]),
  ).toEqual([
    ["approval.requested", null],
    ["approval.resolved", "approve"],
    ["message", "ABORTED"],
    ["run.finished", null],
  ]);
  expect(events.find((e) => e.event === "approval.resolved")?.json).toMatchObject({
    toolCallId: "call_w",
    decision: "approve",
    reason: "fine by B",
  });
  expect(events.at(-1)?.json.run.stopReason).toBe("aborted");
  // The announcement and the aborted result are one write.
  expect(batches).toContainEqual(["approval.resolved", "message"]);
});

it("DELETE taken by the owner A, approve on B after A closed the call: 409 APPROVAL_NOT_PENDING, nothing decided", async () => {
  // A's writes wait from the run's end on: its close of the call lands before B's decision.
  const { outcome } = await deleteOnOwnerApproveOnPeer((changes) => changes.some((c) => c.kind === "finish"));
  expect(outcome).toEqual({ status: 409, code: "APPROVAL_NOT_PENDING", decision: null, resolved: 0 });
});
