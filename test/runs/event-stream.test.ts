import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { RunEventBody } from "../../src/domain/run-events.js";
import { runEventStream, type SseFrame } from "../../src/runs/event-stream.js";
import { MAX_HELD_BYTES, MAX_HELD_EVENTS } from "../../src/runs/held-events.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { finishRun, LossyHub, writeEvents } from "../helpers/event-streams.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir>;
let store: Store;
let hub: LossyHub;
let recorder: RunRecorder;

/** The store with its event reads observed: the resume point of each, in order. */
function observedReads(inner: Store, before?: (after: number) => Promise<void>) {
  const reads: number[] = [];
  const observed: Store = {
    ...inner,
    events: {
      ...inner.events,
      afterWithin: async (runId, seq, bounds) => {
        reads.push(seq);
        const page = await inner.events.afterWithin(runId, seq, bounds);
        await before?.(seq);
        return page;
      },
    },
  };
  return { observed, reads };
}

/** A stream from the start over the observed store, its first frame read; `reads` are those after it. */
async function streamPastStart() {
  const { observed, reads } = observedReads(store);
  const stream = runEventStream({
    store: observed,
    hub,
    runId: "run_1",
    after: 0,
    closed: new AbortController().signal,
  });
  expect((await stream.next()).value?.id).toBe("1");
  reads.length = 0;
  return { stream, reads };
}

async function setUp() {
  hub = new LossyHub();
  await seedSession(store, { id: "ses_1" });
  const record = runRecord({ id: "run_1", sessionId: "ses_1" });
  await store.runs.create(record, [{ type: "run.started", runId: "run_1", seq: 1, at: record.createdAt }]);
  recorder = await RunRecorder.open({ store, hub, runId: "run_1", sessionId: "ses_1" });
}

beforeEach(async () => {
  dir = tempDir();
  store = openSqliteStore({ path: join(dir.path, "a.db") });
  await setUp();
});
afterEach(async () => {
  recorder.dispose();
  await store.close();
  dir.cleanup();
});

const write = (...events: RunEventBody[]) => writeEvents(recorder, ...events);
const finish = () => finishRun(recorder);

it("a gap at the backlog/live seam is detected and healed from the database", async () => {
  const { stream, reads } = await streamPastStart();
  // Seq 3 is stored but its publishing is lost: live delivers 2, then 4.
  hub.lost.add(3);
  await write({ type: "turn.started", turn: 1 });
  await write({ type: "text.delta", text: "lost live" });
  await write({ type: "text.delta", text: "after" });
  await finish();
  const frames: SseFrame[] = [];
  for await (const frame of stream) frames.push(frame);
  expect(frames.map((f) => Number(f.id))).toEqual([2, 3, 4, 5]);
  expect(JSON.parse(frames[1]?.data ?? "{}").text).toBe("lost live");
  // The gap (4 after 2) sent the stream back to the database, from the last seq it had sent.
  expect(reads).toContain(2);
});

it("an event committed while the backlog read is in flight is sent once, in order (reads are awaited)", async () => {
  let wroteDuringRead = false;
  const { observed } = observedReads(store, async () => {
    if (wroteDuringRead) return;
    wroteDuringRead = true;
    // Stored and published after the page was read, before the stream has seen the page.
    await write({ type: "turn.started", turn: 1 });
    await finish();
  });
  const frames: SseFrame[] = [];
  for await (const frame of runEventStream({
    store: observed,
    hub,
    runId: "run_1",
    after: 0,
    closed: new AbortController().signal,
  }))
    frames.push(frame);
  expect(frames.map((f) => [Number(f.id), f.event])).toEqual([
    [1, "run.started"],
    [2, "turn.started"],
    [3, "run.finished"],
  ]);
});

it("the replay seam: backlog then live, each event once and in order, even when live repeats the backlog", async () => {
  await write({ type: "turn.started", turn: 1 });
  await write({ type: "text.delta", text: "a" });
  const closed = new AbortController();
  const stream = runEventStream({ store, hub, runId: "run_1", after: 0, closed: closed.signal });
  const frames: SseFrame[] = [];
  // The first pull subscribes, then reads the backlog.
  const first = await stream.next();
  frames.push(first.value as SseFrame);
  // Events written while the backlog is being sent arrive live; a repeat of a stored one is dropped.
  await write({ type: "text.delta", text: "b" });
  hub.publish("run_1", await store.events.after("run_1", 1));
  await finish();
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
  await finish();
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
  await write({ type: "turn.started", turn: 1 });
  await finish();
  const rest: string[] = [];
  for await (const f of a) rest.push(f.id);
  expect(rest).toEqual(["2", "3"]);
  expect(hub.watcherCount("run_1")).toBe(0);
});

it("a long backlog is replayed page by page, gapless, with live events that arrive during the replay", async () => {
  for (let i = 0; i < 1200; i++) await write({ type: "text.delta", text: `t${i}` });
  const stream = runEventStream({ store, hub, runId: "run_1", after: 0, closed: new AbortController().signal });
  const ids: number[] = [];
  for (let i = 0; i < 700; i++) ids.push(Number((await stream.next()).value?.id));
  await write({ type: "text.delta", text: "live" });
  await finish();
  for await (const frame of stream) ids.push(Number(frame.id));
  expect(ids).toEqual(Array.from({ length: 1203 }, (_, i) => i + 1));
});

it("a live stream resumed past the run's last event still ends when the run finishes", async () => {
  await write({ type: "turn.started", turn: 1 });
  const closed = new AbortController();
  // Events so far: 1 and 2; run.finished will be 3, which this client claims to have seen.
  const stream = runEventStream({ store, hub, runId: "run_1", after: 5, closed: closed.signal });
  const frames: SseFrame[] = [];
  const done = (async () => {
    for await (const frame of stream) frames.push(frame);
  })();
  await new Promise((resolve) => setImmediate(resolve));
  await finish();
  const ended = await Promise.race([done.then(() => "ended"), new Promise((r) => setTimeout(() => r("hung"), 2000))]);
  closed.abort();
  expect(ended).toBe("ended");
  expect(frames).toEqual([]);
});

it("a watcher that stops reading holds a bounded number of live events, then reads on from the database, gapless", async () => {
  const { stream, reads } = await streamPastStart();
  // The watcher reads nothing while the run writes far more than may be held for it.
  const count = MAX_HELD_EVENTS * 2 + 10;
  for (let i = 0; i < count; i++) await write({ type: "text.delta", text: `t${i}` });
  await finish();
  const ids: number[] = [1];
  for await (const frame of stream) ids.push(Number(frame.id));
  expect(ids).toEqual(Array.from({ length: count + 2 }, (_, i) => i + 1));
  // What it missed came from the database (resuming after the last event it was sent), not from memory.
  expect(reads[0]).toBe(1);
});

it("one live event larger than the held-bytes bound is read from the database", async () => {
  const { stream, reads } = await streamPastStart();
  await write({ type: "text.delta", text: "x".repeat(MAX_HELD_BYTES + 1) });
  await finish();
  const frames: SseFrame[] = [];
  for await (const frame of stream) frames.push(frame);
  expect(frames.map((f) => f.id)).toEqual(["2", "3"]);
  expect(JSON.parse(frames[0]?.data ?? "{}").text).toHaveLength(MAX_HELD_BYTES + 1);
  expect(reads.length).toBeGreaterThan(0);
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
  await write(
    ...Array.from({ length: MAX_HELD_EVENTS + 5 }, (_, i) => ({ type: "text.delta" as const, text: `t${i}` })),
  );
  await finish();
  const ended = await Promise.race([done.then(() => "ended"), new Promise((r) => setTimeout(() => r("hung"), 2000))]);
  closed.abort();
  expect(ended).toBe("ended");
  expect(frames).toEqual([]);
});

it("events dropped (held overflowed) while a stored page is being sent are read back without waiting for another publish", async () => {
  // A short backlog: one page, `more` false.
  await write({ type: "turn.started", turn: 1 });
  await write({ type: "text.delta", text: "a" });
  const closed = new AbortController();
  const stream = runEventStream({ store, hub, runId: "run_1", after: 0, closed: closed.signal });
  // The stream has read its page (1..3) and sent the first frame; the client now reads slowly.
  expect((await stream.next()).value?.id).toBe("1");
  // Meanwhile the run writes more than may be held for this watcher, then waits (no more events).
  const count = MAX_HELD_EVENTS + 10;
  await write(...Array.from({ length: count }, (_, i) => ({ type: "text.delta" as const, text: `t${i}` })));
  // The client reads on: the rest of the page, then what it missed (seq 4 onward).
  expect((await stream.next()).value?.id).toBe("2");
  expect((await stream.next()).value?.id).toBe("3");
  const next = await Promise.race([
    stream.next().then((r) => r.value?.id ?? "done"),
    new Promise<string>((resolve) => setTimeout(() => resolve("stuck"), 2000)),
  ]);
  closed.abort();
  expect(next).toBe("4");
});
