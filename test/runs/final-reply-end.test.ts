import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { commitFinalReply } from "../../src/runs/finish.js";
import { LiveRun } from "../../src/runs/live-run.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { RunManager } from "../../src/runs/run-manager.js";
import type { Store } from "../../src/store/store.js";
import { peek } from "../fakes/peek-tool.js";
import { ScriptedModel, type ScriptedStep } from "../fakes/scripted-model.js";
import { faultySqlite } from "../helpers/faulty-sqlite.js";
import { allSteps } from "../helpers/run-lists.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { until } from "../helpers/until.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const twoTurns = (): ScriptedStep[] => [{ toolCalls: [{ id: "call_1", name: "peek", input: "{}" }] }, { text: "done" }];

/** A run manager over a faulty SQLite store; `wrap` may wrap the store the manager uses. */
async function setup({ wrap = (store: Store) => store, replies = twoTurns() } = {}) {
  const { sqlite, faulty, store } = faultySqlite("final-reply-", cleanups);
  const hub = new EventHub();
  const manager = new RunManager({
    store: wrap(store),
    hub,
    model: new ScriptedModel(replies),
    toolsFor: () => [peek],
    maxConcurrentRuns: 4,
    approvalTimeoutMs: 60_000,
    logger: pino({ level: "silent" }),
  });
  const session = await seedSession(store, { id: newId("ses"), approval: { default: "allow" } });
  return { sqlite, store, faulty, hub, manager, session };
}

const kinds = (commit: { changes: readonly { kind: string }[] }) => commit.changes.map((c) => c.kind);

describe("the model's final reply carries the run's end", () => {
  it("the reply, its message event, the turn's trace and run.finished are one write", async () => {
    const { store, faulty, manager, session } = await setup();
    const { run } = await manager.start({ session, input: "go", maxTurns: 4 });
    const finished = await manager.waitForFinish(run.id);
    expect(finished.stopReason).toBe("complete");
    expect(finished.stats).toMatchObject({ modelCalls: 2, toolCalls: 1, turns: 2 });

    // One write holds the reply and the end, and nothing is written after it.
    const last = faulty.commits.at(-1);
    expect(faulty.commits.filter((c) => kinds(c).includes("finish"))).toEqual([last]);
    // (the finish stores the final stats: no stats change of its own)
    expect(last && kinds(last).filter((k) => k !== "step")).toEqual(["message", "finish"]);
    expect(last && kinds(last)).toContain("step");
    // (after what was buffered: the turn's start and its text)
    const own = last?.events.filter((e) => e.type !== "text.delta" && e.type !== "turn.started");
    expect(own?.map((e) => e.type)).toEqual(["message", "run.finished"]);
    const stored = await store.runs.get(run.id);
    expect(stored).toMatchObject({ status: "finished", stopReason: "complete", stats: finished.stats });
    expect((await allSteps(store, run.id)).map((s) => s.turn)).toEqual([1, 2]);
    const events = (await store.events.after(run.id, 0)).map((e) => JSON.parse(e.data));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ type: "run.finished", run: { stopReason: "complete" } });
    expect(events.at(-2)).toMatchObject({ type: "message", message: { role: "assistant", content: "done" } });
  });

  it("a DELETE while that write is in flight finds the run finished: 200 with its end, never aborted", async () => {
    const { store, faulty, manager, session } = await setup();
    const release = faulty.stallWrites("finish");
    const { run } = await manager.start({ session, input: "go", maxTurns: 4 });
    await until(
      () => faulty.commits.some((c) => kinds(c).includes("finish")),
      (seen) => seen,
      "the final write",
    );
    const cancel = await manager.cancel(run.id);
    expect(cancel.accepted).toBe(false);
    expect(cancel.run).toMatchObject({ status: "finished", stopReason: "complete" });
    release();
    expect((await manager.waitForFinish(run.id)).stopReason).toBe("complete");
    expect(await store.runs.get(run.id)).toMatchObject({ status: "finished", stopReason: "complete" });
  });
});

describe("commitFinalReply", () => {
  async function liveRun() {
    const { sqlite, faulty, hub, session } = await setup();
    const record = runRecord({ id: newId("run"), sessionId: session.id });
    await sqlite.runs.create(record, [{ type: "run.started", runId: record.id, seq: 1, at: record.createdAt }]);
    const recorder = await RunRecorder.open({
      store: faulty.store,
      hub,
      runId: record.id,
      sessionId: session.id,
      lastEvent: 1,
    });
    cleanups.push(() => recorder.dispose());
    return { sqlite, faulty, live: new LiveRun(record, session, recorder) };
  }
  const reply = { id: newId("msg"), role: "assistant" as const, content: "done" };
  const stats = { modelCalls: 1, toolCalls: 0, turns: 1, inputTokens: 3, outputTokens: 2, durationMs: 5 };

  it("on a run being cancelled writes the reply alone: the run's own finish then ends it aborted", async () => {
    const { sqlite, live } = await liveRun();
    live.cancel("by a test");
    const view = await commitFinalReply({ live, message: reply, stats, changes: [{ kind: "stats", stats }] });
    expect(view).toBeNull();
    expect(live.endStored).toBeNull();
    expect((await sqlite.runs.get(live.id))?.status).not.toBe("finished");
    expect((await sqlite.messages.ofRun(live.sessionId, live.id)).map((m) => m.content)).toEqual(["done"]);
    expect((await sqlite.events.after(live.id, 0)).map((e) => e.type)).toEqual(["run.started", "message"]);
  });

  it("a write that fails stores nothing and puts the run back to running", async () => {
    const { sqlite, faulty, live } = await liveRun();
    faulty.failChange("finish", { times: 1 });
    await expect(commitFinalReply({ live, message: reply, stats, changes: [] })).rejects.toThrow();
    expect(live.phase).toEqual({ name: "running", tool: null });
    expect(live.endStored).toBeNull();
    expect(await sqlite.messages.ofRun(live.sessionId, live.id)).toEqual([]);
    expect((await sqlite.runs.get(live.id))?.status).toBe("running");
  });
});

describe("a run's end and the session's queue", () => {
  it("with nothing queued, the end starts no queue transaction; a queued run still starts", async () => {
    let starts = 0;
    const { manager: counting, session } = await setup({
      replies: [{ text: "one" }, { text: "two" }, { text: "three" }],
      wrap: (store) => ({
        ...store,
        runs: {
          ...store.runs,
          startQueued: (...args) => {
            starts++;
            return store.runs.startQueued(...args);
          },
        },
      }),
    });
    const first = await counting.start({ session, input: "a", maxTurns: 2 });
    const queued = await counting.start({ session, input: "b", maxTurns: 2, ifBusy: "enqueue" });
    await counting.waitForFinish(first.run.id);
    expect((await counting.waitForFinish(queued.run.id)).stopReason).toBe("complete");
    const afterQueue = starts;
    expect(afterQueue).toBeGreaterThan(0);
    const alone = await counting.start({ session, input: "c", maxTurns: 2 });
    await counting.waitForFinish(alone.run.id);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(starts).toBe(afterQueue);
  });
});
