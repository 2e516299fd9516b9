import { join } from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { NEXT_WRITE_DELAY_MS, RunRecorder } from "../../src/runs/recorder.js";

import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir>;
let store: Store;

beforeEach(async () => {
  dir = tempDir();
  store = openSqliteStore({ path: join(dir.path, "a.db") });
  await seedSession(store, { id: "ses_1" });
  await store.runs.create(runRecord({ id: "run_1", sessionId: "ses_1" }), []);
});
afterEach(async () => {
  vi.useRealTimers();
  await store.close();
  dir.cleanup();
});

/** The end of this turn of the event loop (callbacks queued before it run first). */
const turnEnd = () => new Promise((resolve) => setImmediate(resolve));
/** vi.waitFor's own default (1 s) is a fixed wait a loaded machine can outlast. */
const WAIT = { timeout: 10_000 };

/** The store with every commit held until `release()`, and the commits counted. */
function gatedStore(inner: Store) {
  let open: (() => void) | null = null;
  let gate: Promise<void> | null = null;
  const counts = { commits: 0 };
  const gated: Store = {
    ...inner,
    commitRun: async (runId, changes, events) => {
      counts.commits++;
      if (gate) await gate;
      return inner.commitRun(runId, changes, events);
    },
  };
  return {
    store: gated,
    counts,
    hold: () => {
      gate = new Promise((resolve) => (open = resolve));
    },
    release: () => {
      gate = null;
      open?.();
    },
  };
}

it("buffered text deltas are written together once this turn of the event loop is done (no timer), and published only once stored", async () => {
  const hub = new EventHub();
  const counted = gatedStore(store);
  const seen: { seq: number; storedSeqs: number[] }[] = [];
  hub.subscribe("run_1", (event) => {
    // What is stored when the event is seen, read at once.
    void store.events
      .after("run_1", 0)
      .then((rows) => seen.push({ seq: event.seq, storedSeqs: rows.map((r) => r.seq) }));
  });
  const recorder = await RunRecorder.open({ store: counted.store, hub, runId: "run_1", sessionId: "ses_1" });
  recorder.buffer({ type: "text.delta", text: "hel" });
  recorder.buffer({ type: "text.delta", text: "lo" });
  expect(counted.counts.commits).toBe(0);
  await turnEnd();
  expect(counted.counts.commits).toBe(1);
  await vi.waitFor(() => expect(seen).toEqual([{ seq: 1, storedSeqs: [1] }]), WAIT);
  const stored = await store.events.after("run_1", 0);
  expect(stored.map((e) => [e.seq, JSON.parse(e.data).text])).toEqual([[1, "hello"]]);
  recorder.dispose();
});

it("deltas that arrive while a write is in flight go out together in the next write, gapless", async () => {
  const hub = new EventHub();
  const published: number[] = [];
  const gated = gatedStore(store);
  hub.subscribe("run_1", (event) => published.push(event.seq));
  const recorder = await RunRecorder.open({ store: gated.store, hub, runId: "run_1", sessionId: "ses_1" });
  gated.hold();
  const message = recorder.commitMessage({ id: "m1", role: "assistant", content: "a" });
  for (const piece of ["b", "c", "d"]) {
    recorder.buffer({ type: "text.delta", text: piece });
    await turnEnd();
  }
  // The message's write is still held: nothing is published before it is stored.
  expect(published).toEqual([]);
  gated.release();
  await message;
  // The next write waits for its group's commit (see GroupCommit), then publishes.
  await vi.waitFor(() => expect(published).toEqual([1, 2]), WAIT);
  const events = await store.events.after("run_1", 0);
  expect(events.map((e) => [e.seq, e.type])).toEqual([
    [1, "message"],
    [2, "text.delta"],
  ]);
  expect(JSON.parse(events[1]?.data ?? "{}").text).toBe("bcd");
  expect(published).toEqual([1, 2]);
  // The held write, the one that took the three deltas, and the empty ones after it.
  expect(gated.counts.commits).toBe(2);
  recorder.dispose();
});

it("a write that finishes the run stores its stats with the finish alone, not the stats changes deferred before it", async () => {
  const written: string[][] = [];
  const observed: Store = {
    ...store,
    commitRun: (runId, changes, events, fence) => {
      written.push(changes.map((change) => change.kind));
      return store.commitRun(runId, changes, events, fence);
    },
  };
  const recorder = await RunRecorder.open({ store: observed, hub: new EventHub(), runId: "run_1", sessionId: "ses_1" });
  const stats = (modelCalls: number) => ({ ...emptyStats(), modelCalls, turns: modelCalls });
  recorder.defer({ kind: "stats", stats: stats(1) });
  recorder.defer({ kind: "stats", stats: stats(2) });
  await recorder.write(() => ({ changes: [], events: [{ type: "turn.started", turn: 3 }] }));
  recorder.defer({ kind: "stats", stats: stats(3) });
  await recorder.write(() => ({
    changes: [
      {
        kind: "finish",
        stopReason: "complete",
        stopDetail: null,
        error: null,
        stats: stats(4),
        finishedAt: "2026-01-01T00:00:00.000Z",
      },
    ],
    events: [],
  }));
  recorder.dispose();
  // Of deferred stats only the latest is written; none beside a finish, which carries the final ones.
  expect(written).toEqual([["stats"], ["finish"]]);
  expect((await store.runs.get("run_1"))?.stats.modelCalls).toBe(4);
});

it("a turn start waits for the run's next write and goes out in it, before the reply: one transaction, one publication", async () => {
  const hub = new EventHub();
  const published: number[][] = [];
  hub.subscribe("run_1", (event) => published.push([event.seq]));
  const counted = gatedStore(store);
  const recorder = await RunRecorder.open({ store: counted.store, hub, runId: "run_1", sessionId: "ses_1" });
  // Timers stand still (immediates run): however slow the machine, the turn start's delay has
  // not passed when the reply comes, so only the end of a turn could have written it alone.
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  recorder.buffer({ type: "turn.started", turn: 1 });
  // The model answers a few turns of the event loop later.
  for (let i = 0; i < 3; i++) await turnEnd();
  expect(counted.counts.commits).toBe(0);
  vi.useRealTimers();
  await recorder.commitMessage({ id: "m1", role: "assistant", content: "done" });
  expect(counted.counts.commits).toBe(1);
  const events = await store.events.after("run_1", 0);
  expect(events.map((e) => [e.seq, e.type])).toEqual([
    [1, "turn.started"],
    [2, "message"],
  ]);
  expect(published).toEqual([[1], [2]]);
  recorder.dispose();
});

it(`a turn start with nothing after it is written alone within NEXT_WRITE_DELAY_MS (${NEXT_WRITE_DELAY_MS} ms)`, async () => {
  const counted = gatedStore(store);
  const recorder = await RunRecorder.open({
    store: counted.store,
    hub: new EventHub(),
    runId: "run_1",
    sessionId: "ses_1",
  });
  const started = performance.now();
  recorder.buffer({ type: "turn.started", turn: 1 });
  await turnEnd();
  expect(counted.counts.commits).toBe(0);
  await vi.waitFor(() => expect(counted.counts.commits).toBe(1), { ...WAIT, interval: 5 });
  expect(performance.now() - started).toBeGreaterThanOrEqual(NEXT_WRITE_DELAY_MS - 2);
  // Stored once the write's group has committed (the end of that turn of the event loop).
  await vi.waitFor(
    async () => expect((await store.events.after("run_1", 0)).map((e) => e.type)).toEqual(["turn.started"]),
    WAIT,
  );
  recorder.dispose();
});

it("a step's deferred trace and stats wait with the next turn's start for its first delta: one write", async () => {
  const counted = gatedStore(store);
  const recorder = await RunRecorder.open({
    store: counted.store,
    hub: new EventHub(),
    runId: "run_1",
    sessionId: "ses_1",
  });
  // The end of a step (after its tool results), then the next turn's model request.
  recorder.defer({ kind: "stats", stats: { ...emptyStats(), modelCalls: 1 } });
  recorder.buffer({ type: "turn.started", turn: 2 });
  // The model's first delta comes a while later, within the delay.
  await new Promise((resolve) => setTimeout(resolve, NEXT_WRITE_DELAY_MS - 25));
  expect(counted.counts.commits).toBe(0);
  recorder.buffer({ type: "text.delta", text: "hi" });
  await turnEnd();
  expect(counted.counts.commits).toBe(1);
  await vi.waitFor(
    async () =>
      expect((await store.events.after("run_1", 0)).map((e) => e.type)).toEqual(["turn.started", "text.delta"]),
    WAIT,
  );
  expect((await store.runs.get("run_1"))?.stats.modelCalls).toBe(1);
  // Nothing was left for a write of its own.
  await new Promise((resolve) => setTimeout(resolve, NEXT_WRITE_DELAY_MS));
  expect(counted.counts.commits).toBe(1);
  recorder.dispose();
});
