/**
 * A DELETE taken by one instance for a run another executes, over one PostgreSQL database, as
 * on one instance: "202 with the run (cancelling), and run.finished with aborted always
 * follows; 200 no-op on a finished run", and a decision posted after that DELETE is refused
 * (409) as on one instance (test/http/races.test.ts), never written to the ledger.
 */
import { afterEach, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close();
});

/** Instances A and B (their stores wrapped by `wrapA`, `wrapB`) over one fresh database, one upstream. */
async function twoInstances(wrapA?: (store: Store) => Store, wrapB?: (store: Store) => Store) {
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());
  const a = await startTestServer({ pgUrl: database.url, wrapStore: wrapA });
  servers.push(a);
  const b = await startTestServer({ pgUrl: database.url, upstream: a.upstream, wrapStore: wrapB });
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
  const { sessionId, runId } = await runAwaitingApproval(a);
  const session = { id: sessionId };
  const run = { id: runId };
  holding = true;
  const cancelled = await b.request("DELETE", `/runs/${run.id}`);
  expect(cancelled.status).toBe(202);
  expect(cancelled.body.status).toBe("cancelling");
  const approved = await b.request("POST", `/runs/${run.id}/approvals/call_w`, { body: { decision: "approve" } });
  release();
  expect((await finishedOn(b, run.id)).stopReason).toBe("aborted");
  const ledger = await b.ctx.store.toolCalls.get(run.id, "call_w");
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

it("a DELETE on B while A's final commit (the reply and its end) is on its way: 202 cancelling, and the run ends aborted with the reply stored", async () => {
  let arrive!: () => void;
  let release!: () => void;
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding = true;
  // A's commit of the run's end is held before it reaches the database (its round trip, widened).
  const { a, b } = await twoInstances((store) => ({
    ...store,
    commitRun: async (runId, changes, events, fence) => {
      if (holding && changes.some((c) => c.kind === "finish")) {
        holding = false;
        arrive();
        await opened;
      }
      return store.commitRun(runId, changes, events, fence);
    },
  }));
  a.upstream.enqueue({ text: "all done" });
  const session = (await a.request("POST", "/sessions", { body: {} })).body;
  const run = (await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await arrived;
  const cancelled = await b.request("DELETE", `/runs/${run.id}`);
  release();
  const finished = await finishedOn(b, run.id);
  const events = await (await openSse(`${b.url}/runs/${run.id}/events`)).ended;
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
  expect(cancelled.status).toBe(202);
  expect(cancelled.body.status).toBe("cancelling");
  expect({ stored: finished.stopReason, event: events.at(-1)?.json.run.stopReason }).toEqual({
    stored: "aborted",
    event: "aborted",
  });
  // The model's reply was committed, alone, before the run's end.
  const messages = (await b.request("GET", `/sessions/${session.id}/messages`)).body.items;
  expect(messages.at(-1)).toMatchObject({ role: "assistant", content: "all done" });
});

it("a DELETE on B answered after A has already ended the run it cancelled: 202 with the run as the request found it, cancelling", async () => {
  // B's answer is read once A has acted on the stored request and ended the run.
  const { a, b } = await twoInstances(undefined, (store) => ({
    ...store,
    commitRequest: async (runId, changes) => {
      await store.commitRequest(runId, changes);
      if (!changes.some((c) => c.kind === "cancelRequested")) return;
      await until(
        async () => (await store.runs.get(runId))?.status,
        (status) => status === "finished",
        "A to end the cancelled run",
      );
    },
  }));
  a.upstream.enqueue({ text: ["never ", "ending"], gate: new Promise(() => {}) });
  const session = (await a.request("POST", "/sessions", { body: {} })).body;
  const run = (await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await (await openSse(`${a.url}/runs/${run.id}/events`)).waitFor((e) => e.event === "text.delta");
  const cancelled = await b.request("DELETE", `/runs/${run.id}`);
  expect(cancelled.status).toBe(202);
  expect(cancelled.body).toMatchObject({ id: run.id, status: "cancelling", stopReason: null, finishedAt: null });
  expect((await finishedOn(b, run.id)).stopReason).toBe("aborted");
});

it("DELETEs on B racing A's natural ends: every 202 is followed by aborted, every run finished first is a 200", {
  timeout: 60_000,
}, async () => {
  const { a, b } = await twoInstances();
  const outcomes: Record<string, number> = {};
  for (let i = 0; i < 24; i++) {
    let open!: () => void;
    a.upstream.enqueue({ text: ["partial ", "reply"], gate: new Promise<void>((resolve) => (open = resolve)) });
    const session = (await a.request("POST", "/sessions", { body: {} })).body;
    const run = (await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
    await until(
      async () => a.upstream.requests.length,
      (n) => n >= i + 1,
      "the model request",
    );
    open();
    // Spread over the few milliseconds of A's final commit.
    await new Promise((resolve) => setTimeout(resolve, i % 6));
    const cancelled = await b.request("DELETE", `/runs/${run.id}`);
    const end = await finishedOn(b, run.id);
    const key = `${cancelled.status} ${cancelled.body.status} -> ${end.stopReason}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
  }
  const allowed = new Set(["202 cancelling -> aborted", "200 finished -> complete"]);
  expect(Object.keys(outcomes).filter((key) => !allowed.has(key))).toEqual([]);
});
