/**
 * A cancel one instance takes for a run another executes is stored with who asked for it
 * (migration 0025), and the instance that executes the run ends it saying so, as one instance
 * would: a run whose session DELETE /sessions/{id} deletes says its session was deleted (not "a
 * DELETE /runs/{id} request", and no advice to start a new run in the deleted session), and a run
 * an interrupting start cancels says `ifBusy "interrupt"` (what the console follows). Before,
 * the executing instance fired the run's signal "by a DELETE /runs/{id} request" whoever asked:
 * when it heard of the request (its notification or poll), and when a write of the run was
 * refused because of it (a tool's start, here).
 */
import { afterEach, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { openSse, type SseStream } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close();
});

/** Instances A (its store wrapped by `wrapA`) and B over one fresh database, one upstream. */
async function twoInstances(wrapA?: (store: Store) => Store) {
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());
  const a = await startTestServer({ pgUrl: database.url, wrapStore: wrapA });
  servers.push(a);
  const b = await startTestServer({ pgUrl: database.url, upstream: a.upstream });
  servers.push(b);
  return { a, b };
}

/** The stop detail of the run whose events `watcher` streams, from its `run.finished`. */
async function detailOf(watcher: SseStream): Promise<string> {
  const finished = (await watcher.ended).find((e) => e.event === "run.finished")?.json.run;
  expect(finished?.stopReason).toBe("aborted");
  return finished.stopDetail as string;
}

const saysSessionDeleted = (detail: string) => ({
  namesRunDelete: detail.includes("DELETE /runs/{id}"),
  namesSessionDelete: detail.includes("its session was deleted"),
  advisesNewRun: detail.includes("start a new run"),
});

it("a session B deletes, whose run awaits approval on A: the run's end on A says its session was deleted", async () => {
  const { a, b } = await twoInstances();
  const { sessionId, runId } = await runAwaitingApproval(a);
  const watcher = await openSse(`${a.url}/runs/${runId}/events`);
  expect((await b.request("DELETE", `/sessions/${sessionId}`)).status).toBe(204);
  expect(saysSessionDeleted(await detailOf(watcher))).toEqual({
    namesRunDelete: false,
    namesSessionDelete: true,
    advisesNewRun: false,
  });
});

it("a session B deletes while A's write of a tool's start is on its way: the start refused, the run's end on A says its session was deleted", async () => {
  const arrived = gate();
  const held = gate();
  let holding = true;
  const { a, b } = await twoInstances((store) => ({
    ...store,
    // A hears of the stored cancel only through the refusal of its write (its poll finds nothing).
    runs: new Proxy(store.runs, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name !== "cancelRequested" || typeof value !== "function") return value;
        return async (...args: unknown[]) => (holding ? [] : value.apply(target, args));
      },
    }),
    commitRun: async (runId, changes, events, fence) => {
      if (holding && changes.some((c) => c.kind === "toolCall.started")) {
        arrived.open();
        await held.wait;
      }
      return store.commitRun(runId, changes, events, fence);
    },
  }));
  a.upstream.enqueue(
    { toolCalls: [{ id: "call_s", name: "shell", arguments: JSON.stringify({ command: "echo ran" }) }] },
    { text: "done" },
  );
  const session = (await a.request("POST", "/sessions", { body: { approval: { tools: { shell: "allow" } } } })).body;
  const run = (await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "run it" } })).body;
  const watcher = await openSse(`${a.url}/runs/${run.id}/events`);
  await arrived.wait;
  const deleted = b.request("DELETE", `/sessions/${session.id}`);
  await until(
    async () => (await b.ctx.store.runs.access(run.id))?.status,
    (status) => status === "cancelling",
    "B's cancel request",
  );
  held.open();
  const detail = await detailOf(watcher);
  holding = false;
  expect((await deleted).status).toBe(204);
  expect(saysSessionDeleted(detail)).toEqual({ namesRunDelete: false, namesSessionDelete: true, advisesNewRun: false });
});

it('an interrupting start on B of a run executing on A: the run ends saying ifBusy "interrupt" cancelled it', async () => {
  const { a, b } = await twoInstances();
  const { sessionId, runId } = await runAwaitingApproval(a);
  a.upstream.fallback = () => ({ text: "instead" });
  const started = await b.request("POST", `/sessions/${sessionId}/runs`, {
    body: { input: "instead", ifBusy: "interrupt" },
  });
  expect(started.status).toBe(201);
  const ended = await finishedRun(b, runId);
  expect(ended.stopReason).toBe("aborted");
  expect(ended.stopDetail).toContain('ifBusy "interrupt"');
  await finishedRun(b, started.body.id);
});
