import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { MAX_HELD_BYTES, MAX_HELD_EVENTS, runEventStream, type SseFrame } from "../../src/runs/event-stream.js";
import { RunRecorder } from "../../src/runs/run-recorder.js";
import { type Db, openDatabase } from "../../src/store/database.js";
import { createStore, type Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir>;
let db: Db;
let store: Store;
let hub: EventHub;
let recorder: RunRecorder;

beforeEach(() => {
  dir = tempDir();
  db = openDatabase({ path: join(dir.path, "a.db") });
  store = createStore(db);
  hub = new EventHub();
  seedSession(store, { id: "ses_1" });
  recorder = new RunRecorder(store, hub, "run_1", "ses_1");
  recorder.write(() => {
    store.runs.insert(runRecord({ id: "run_1", sessionId: "ses_1" }));
    return [{ type: "run.started" }];
  });
});
afterEach(() => {
  recorder.dispose();
  db.close();
  dir.cleanup();
});

const finish = () =>
  recorder.write(() => {
    store.runs.finish("run_1", { stopReason: "complete", error: null, stats: emptyStats(), finishedAt: "now" });
    return [{ type: "run.finished", run: { id: "run_1" } as never }];
  });

it("the replay seam: backlog then live, each event once and in order, even when live repeats the backlog", async () => {
  recorder.write(() => [{ type: "turn.started", turn: 1 }]);
  recorder.write(() => [{ type: "text.delta", text: "a" }]);
  const closed = new AbortController();
  const stream = runEventStream({ store, hub, runId: "run_1", after: 0, closed: closed.signal });
  const frames: SseFrame[] = [];
  // The first pull subscribes and reads the backlog in the same synchronous step.
  const first = await stream.next();
  frames.push(first.value as SseFrame);
  // Events written while the backlog is being sent arrive live; a repeat of a stored one is dropped.
  recorder.write(() => [{ type: "text.delta", text: "b" }]);
  hub.publish("run_1", store.events.after("run_1", 1));
  finish();
  for await (const frame of stream) frames.push(frame);
  expect(frames.map((f) => Number(f.id))).toEqual([1, 2, 3, 4, 5]);
  expect(frames.map((f) => f.event)).toEqual([
    "run.started",
    "turn.started",
    "text.delta",
    "text.delta",
    "run.finished",
  ]);
});

it("a stream of a finished run replays from `after` and ends; one past the end ends at once", async () => {
  finish();
  const collect = async (after: number) => {
    const out: string[] = [];
    for await (const f of runEventStream({ store, hub, runId: "run_1", after, closed: new AbortController().signal }))
      out.push(f.id);
    return out;
  };
  expect(await collect(0)).toEqual(["1", "2"]);
  expect(await collect(1)).toEqual(["2"]);
  expect(await collect(2)).toEqual([]);
});

it("two watchers see the same events, and a closed watcher stops without affecting the other", async () => {
  const a = runEventStream({ store, hub, runId: "run_1", after: 0, closed: new AbortController().signal });
  const closeB = new AbortController();
  const b = runEventStream({ store, hub, runId: "run_1", after: 0, closed: closeB.signal });
  expect((await a.next()).value?.id).toBe("1");
  expect((await b.next()).value?.id).toBe("1");
  const pendingB = b.next();
  closeB.abort();
  expect((await pendingB).done).toBe(true);
  expect(hub.watcherCount("run_1")).toBe(1);
  recorder.write(() => [{ type: "turn.started", turn: 1 }]);
  finish();
  const rest: string[] = [];
  for await (const f of a) rest.push(f.id);
  expect(rest).toEqual(["2", "3"]);
  expect(hub.watcherCount("run_1")).toBe(0);
});

it("a long backlog is replayed page by page, gapless, with live events that arrive during the replay", async () => {
  for (let i = 0; i < 1200; i++) recorder.write(() => [{ type: "text.delta", text: `t${i}` }]);
  const stream = runEventStream({ store, hub, runId: "run_1", after: 0, closed: new AbortController().signal });
  const ids: number[] = [];
  for (let i = 0; i < 700; i++) ids.push(Number((await stream.next()).value?.id));
  recorder.write(() => [{ type: "text.delta", text: "live" }]);
  finish();
  for await (const frame of stream) ids.push(Number(frame.id));
  expect(ids).toEqual(Array.from({ length: 1203 }, (_, i) => i + 1));
});

it("a live stream resumed past the run's last event still ends when the run finishes", async () => {
  recorder.write(() => [{ type: "turn.started", turn: 1 }]);
  const closed = new AbortController();
  // Events so far: 1 and 2; run.finished will be 3, which this client claims to have seen.
  const stream = runEventStream({ store, hub, runId: "run_1", after: 5, closed: closed.signal });
  const frames: SseFrame[] = [];
  const done = (async () => {
    for await (const frame of stream) frames.push(frame);
  })();
  await new Promise((resolve) => setImmediate(resolve));
  finish();
  const ended = await Promise.race([done.then(() => "ended"), new Promise((r) => setTimeout(() => r("hung"), 2000))]);
  closed.abort();
  expect(ended).toBe("ended");
  expect(frames).toEqual([]);
});

it("a watcher that stops reading holds a bounded number of live events, then reads on from the database, gapless", async () => {
  const stream = runEventStream({ store, hub, runId: "run_1", after: 0, closed: new AbortController().signal });
  expect((await stream.next()).value?.id).toBe("1");
  const reads: number[] = [];
  const after = store.events.after.bind(store.events);
  store.events.after = (runId, seq, limit) => {
    reads.push(seq);
    return after(runId, seq, limit);
  };
  // The watcher reads nothing while the run writes far more than may be held for it.
  const count = MAX_HELD_EVENTS * 2 + 10;
  for (let i = 0; i < count; i++) recorder.write(() => [{ type: "text.delta", text: `t${i}` }]);
  finish();
  const ids: number[] = [1];
  for await (const frame of stream) ids.push(Number(frame.id));
  expect(ids).toEqual(Array.from({ length: count + 2 }, (_, i) => i + 1));
  // What it missed came from the database (resuming after the last event it was sent), not from memory.
  expect(reads[0]).toBe(1);
});

it("one live event larger than the held-bytes bound is read from the database", async () => {
  const stream = runEventStream({ store, hub, runId: "run_1", after: 0, closed: new AbortController().signal });
  expect((await stream.next()).value?.id).toBe("1");
  let reads = 0;
  const after = store.events.after.bind(store.events);
  store.events.after = (runId, seq, limit) => {
    reads++;
    return after(runId, seq, limit);
  };
  recorder.write(() => [{ type: "text.delta", text: "x".repeat(MAX_HELD_BYTES + 1) }]);
  finish();
  const frames: SseFrame[] = [];
  for await (const frame of stream) frames.push(frame);
  expect(frames.map((f) => f.id)).toEqual(["2", "3"]);
  expect(JSON.parse(frames[0]?.data ?? "{}").text).toHaveLength(MAX_HELD_BYTES + 1);
  expect(reads).toBeGreaterThan(0);
});

it("a stream resumed past the end still ends when the run's last events overflow what may be held", async () => {
  const closed = new AbortController();
  const stream = runEventStream({ store, hub, runId: "run_1", after: 1_000_000, closed: closed.signal });
  const frames: SseFrame[] = [];
  const done = (async () => {
    for await (const frame of stream) frames.push(frame);
  })();
  await new Promise((resolve) => setImmediate(resolve));
  // One write whose events (the last one run.finished) are more than may be held.
  recorder.write(() => [
    ...Array.from({ length: MAX_HELD_EVENTS + 5 }, (_, i) => ({ type: "text.delta" as const, text: `t${i}` })),
  ]);
  finish();
  const ended = await Promise.race([done.then(() => "ended"), new Promise((r) => setTimeout(() => r("hung"), 2000))]);
  closed.abort();
  expect(ended).toBe("ended");
  expect(frames).toEqual([]);
});
