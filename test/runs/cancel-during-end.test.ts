/**
 * DELETE /runs/{id} while a run's own end is being written: "202 with the run (cancelling),
 * and run.finished with aborted always follows; 200 no-op on a finished run". A run whose loop
 * stopped by itself (max_turns, and every end but a final reply's goes the same way) is
 * answered one way or the other, never 202 followed by a run.finished that is not `aborted`.
 */
import pino from "pino";
import { afterEach, expect, it } from "vitest";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunManager } from "../../src/runs/run-manager.js";
import type { Store } from "../../src/store/store.js";
import { peek } from "../fakes/peek-tool.js";
import { ScriptedModel } from "../fakes/scripted-model.js";
import { faultySqlite } from "../helpers/faulty-sqlite.js";
import { seedSession } from "../helpers/seed.js";
import { until } from "../helpers/until.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const kinds = (commit: { changes: readonly { kind: string }[] }) => commit.changes.map((c) => c.kind);
const lastEvent = async (store: Store, runId: string) =>
  JSON.parse((await store.events.after(runId, 0)).at(-1)?.data ?? "null");

/** A run that stops at max_turns after one tool call; `hold` stalls the first write matching it. */
async function maxTurnsRun(prefix: string, hold: "finish" | null) {
  const { store, faulty } = faultySqlite(prefix, cleanups);
  const manager = new RunManager({
    store,
    hub: new EventHub(),
    model: new ScriptedModel([{ toolCalls: [{ id: "call_1", name: "peek", input: "{}" }] }, { text: "never" }]),
    toolsFor: () => [peek],
    maxConcurrentRuns: 4,
    approvalTimeoutMs: 60_000,
    logger: pino({ level: "silent" }),
  });
  cleanups.unshift(() => manager.shutdown({ graceMs: 1000 }));
  const session = await seedSession(store, { id: newId("ses"), approval: { default: "allow" } });
  const release = hold ? faulty.stallWrites(hold) : () => {};
  const { run } = await manager.start({ session, input: "go", maxTurns: 1 });
  return { store, faulty, manager, run, release };
}

it("a DELETE while a max_turns end is being written is answered 200 with that end, which is what is stored", async () => {
  const { store, faulty, manager, run, release } = await maxTurnsRun("cancel-end-", "finish");
  await until(
    () => faulty.commits.some((c) => kinds(c).includes("finish")),
    (seen) => seen,
    "the end's write",
  );
  const cancelling = manager.cancel(run.id);
  // Let the cancel reach the store if it goes there, then let the end's write through.
  await new Promise((resolve) => setTimeout(resolve, 50));
  release();
  const cancel = await cancelling;
  const finished = await manager.waitForFinish(run.id);
  expect(cancel.accepted).toBe(false);
  expect(cancel.run).toMatchObject({ status: "finished", stopReason: "max_turns" });
  expect(finished.stopReason).toBe("max_turns");
  expect((await lastEvent(store, run.id)).run.stopReason).toBe("max_turns");
});

it("a DELETE before the end's reads are done still ends the run aborted (202, then run.finished aborted)", async () => {
  const { store, faulty, manager, run } = await maxTurnsRun("cancel-before-end-", null);
  // The end reads the run's open calls before it writes: hold that read, cancel meanwhile.
  let releaseRead!: () => void;
  const held = new Promise<void>((resolve) => {
    releaseRead = resolve;
  });
  let reading = false;
  const open = store.toolCalls.open.bind(store.toolCalls);
  store.toolCalls.open = async (runId) => {
    reading = true;
    await held;
    return open(runId);
  };
  await until(
    () => reading,
    (seen) => seen,
    "the end's read",
  );
  expect(faulty.commits.some((c) => kinds(c).includes("finish"))).toBe(false);
  const cancel = await manager.cancel(run.id);
  releaseRead();
  const finished = await manager.waitForFinish(run.id);
  expect(cancel.accepted).toBe(true);
  expect(finished.stopReason).toBe("aborted");
  expect((await lastEvent(store, run.id)).run.stopReason).toBe("aborted");
});

it("a DELETE whose cancelling status cannot be stored is still answered 202 cancelling, and the run ends aborted", async () => {
  const { store, faulty } = faultySqlite("cancel-status-", cleanups);
  const manager = new RunManager({
    store,
    hub: new EventHub(),
    model: new ScriptedModel([{ toolCalls: [{ id: "call_1", name: "shell", input: "{}" }] }]),
    toolsFor: () => [{ ...peek, name: "shell", readOnly: false }],
    maxConcurrentRuns: 4,
    approvalTimeoutMs: 60_000,
    logger: pino({ level: "silent" }),
  });
  cleanups.unshift(() => manager.shutdown({ graceMs: 1000 }));
  const session = await seedSession(store, { id: newId("ses") });
  const { run } = await manager.start({ session, input: "go", maxTurns: 3 });
  await until(
    async () => (await store.runs.get(run.id))?.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  faulty.failChange((change) => change.kind === "status" && change.status === "cancelling", { times: 1 });
  const cancel = await manager.cancel(run.id);
  expect(cancel.accepted).toBe(true);
  expect(cancel.run.status).toBe("cancelling");
  expect((await manager.waitForFinish(run.id)).stopReason).toBe("aborted");
});

it("a wait for a queued run's end is answered SHUTTING_DOWN when shutdown begins, not held until the connection is reset", async () => {
  const { store } = faultySqlite("wait-shutdown-", cleanups);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const manager = new RunManager({
    store,
    hub: new EventHub(),
    model: new ScriptedModel([{ text: "first", gate }, { text: "second" }]),
    toolsFor: () => [peek],
    maxConcurrentRuns: 4,
    approvalTimeoutMs: 60_000,
    logger: pino({ level: "silent" }),
  });
  const session = await seedSession(store, { id: newId("ses") });
  await manager.start({ session, input: "first", maxTurns: 3 });
  const queued = await manager.start({ session, input: "second", maxTurns: 3, ifBusy: "enqueue" });
  expect(queued.run.status).toBe("queued");
  const waited = manager.waitForFinish(queued.run.id).then(
    () => "finished",
    (err: { code?: string }) => err.code,
  );
  // The wait is under way (it waits for the queued run's run.finished) when shutdown begins.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const stopping = manager.shutdown({ graceMs: 200, resume: true });
  expect(await Promise.race([waited, new Promise((resolve) => setTimeout(() => resolve("still waiting"), 2000))])).toBe(
    "SHUTTING_DOWN",
  );
  open();
  await stopping;
});
