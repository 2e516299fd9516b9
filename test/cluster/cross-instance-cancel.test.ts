/**
 * A DELETE taken by one instance for a run another executes, over one PostgreSQL database, as
 * on one instance: "202 with the run (cancelling), and run.finished with aborted always
 * follows; 200 no-op on a finished run", and a decision posted after that DELETE is refused
 * (409) as on one instance (test/http/races.test.ts), never written to the ledger.
 */
import { afterEach, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close();
});

/** Instance A (its store's commits wrapped by `wrapStore`) and B over one fresh database, one upstream. */
async function twoInstances(wrapStore?: (store: Store) => Store) {
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());
  const a = await startTestServer({ pgUrl: database.url, wrapStore });
  servers.push(a);
  const b = await startTestServer({ pgUrl: database.url, upstream: a.upstream });
  servers.push(b);
  return { a, b };
}

const finishedOn = (server: TestServer, runId: string) =>
  until(
    async () => (await server.request("GET", `/runs/${runId}`)).body,
    (view) => view.status === "finished",
    "the run to finish",
  );

it("DELETE then approve, both on B, for a run awaiting approval on A: 202, then the approval is refused (409) and nothing is decided", async () => {
  // A's writes after the DELETE are held (a slow commit, or A slow to hear of the cancel) until the approval is answered.
  let holding = false;
  let release!: () => void;
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  const { a, b } = await twoInstances((store) => ({
    ...store,
    commitRun: async (runId, changes, events, fence) => {
      if (holding) await opened;
      return store.commitRun(runId, changes, events, fence);
    },
  }));
  a.upstream.enqueue({ toolCalls: [{ id: "call_1", name: "shell", arguments: '{"command":"echo x > ran.txt"}' }] });
  const session = (await a.request("POST", "/sessions", { body: {} })).body;
  const run = (await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await until(
    async () => (await b.request("GET", `/runs/${run.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  holding = true;
  const cancelled = await b.request("DELETE", `/runs/${run.id}`);
  expect(cancelled.status).toBe(202);
  expect(cancelled.body.status).toBe("cancelling");
  const approved = await b.request("POST", `/runs/${run.id}/approvals/call_1`, { body: { decision: "approve" } });
  release();
  expect((await finishedOn(b, run.id)).stopReason).toBe("aborted");
  const ledger = await b.ctx.store.toolCalls.get(run.id, "call_1");
  const result = (await b.request("GET", `/sessions/${session.id}/messages`)).body.items.find(
    (m: { role: string }) => m.role === "tool",
  );
  expect(result.metadata.errorCode).toBe("ABORTED");
  expect({ status: approved.status, code: approved.body.error?.code, decision: ledger?.decision ?? null }).toEqual({
    status: 409,
    code: "APPROVAL_NOT_PENDING",
    decision: null,
  });
});
