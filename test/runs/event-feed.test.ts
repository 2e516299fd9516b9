import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { RunEventBody } from "../../src/domain/run-events.js";
import { followRunEvents } from "../../src/runs/event-feed.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { CollectingSink, finishRun, LossyHub, writeEvents } from "../helpers/event-streams.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

let dir: ReturnType<typeof tempDir>;
let store: Store;
let hub: LossyHub;
let recorder: RunRecorder;

/** The store with its event reads observed: the resume point of each, in order. */
function observed(inner: Store) {
  const reads: number[] = [];
  const wrapped: Store = {
    ...inner,
    events: {
      ...inner.events,
      afterWithin: (runId, seq, bounds) => {
        reads.push(seq);
        return inner.events.afterWithin(runId, seq, bounds);
      },
    },
  };
  return { wrapped, reads };
}

const write = (...events: RunEventBody[]) => writeEvents(recorder, ...events);
const finish = () => finishRun(recorder);
const turnEnd = () => new Promise((resolve) => setImmediate(resolve));

function follow(
  after = 0,
  options: { s?: Store; closed?: AbortSignal; reasoning?: boolean; runId?: string; finished?: boolean } = {},
) {
  const sink = new CollectingSink();
  const done = followRunEvents({
    store: options.s ?? store,
    hub,
    runId: options.runId ?? "run_1",
    after,
    closed: options.closed ?? new AbortController().signal,
    sink,
    reasoning: options.reasoning,
    finished: options.finished,
  });
  return { sink, done };
}

beforeEach(async () => {
  dir = tempDir();
  store = openSqliteStore({ path: join(dir.path, "a.db") });
  hub = new LossyHub();
  await seedSession(store, { id: "ses_1" });
  const record = runRecord({ id: "run_1", sessionId: "ses_1" });
  await store.runs.create(record, [{ type: "run.started", runId: "run_1", seq: 1, at: record.createdAt }]);
  recorder = await RunRecorder.open({ store, hub, runId: "run_1", sessionId: "ses_1" });
});
afterEach(async () => {
  recorder.dispose();
  await store.close();
  dir.cleanup();
});

it("replays the backlog, then sends live events as soon as their publish is done, and ends after run.finished", async () => {
  await write({ type: "turn.started", turn: 1 });
  const { sink, done } = follow();
  await turnEnd();
  expect(sink.seqs).toEqual([1, 2]);
  await write({ type: "text.delta", text: "a" });
  // Live and caught up: the event was handed over as soon as its publish was done.
  expect(sink.seqs).toEqual([1, 2, 3]);
  await finish();
  await done;
  expect(sink.events.map((e) => e.type)).toEqual(["run.started", "turn.started", "text.delta", "run.finished"]);
  expect(hub.watcherCount("run_1")).toBe(0);
});

it("a gap in what is published is healed from the database, gapless and in order", async () => {
  const { wrapped, reads } = observed(store);
  const { sink, done } = follow(0, { s: wrapped });
  await turnEnd();
  hub.lost.add(3);
  await write({ type: "turn.started", turn: 1 });
  await write({ type: "text.delta", text: "lost live" });
  await write({ type: "text.delta", text: "after" });
  await finish();
  await done;
  expect(sink.seqs).toEqual([1, 2, 3, 4, 5]);
  expect(JSON.parse(sink.events[2]?.data ?? "{}").text).toBe("lost live");
  expect(reads).toContain(2);
});

it("events published while the backlog is read are sent once, after it; repeats of stored ones are dropped", async () => {
  for (let i = 0; i < 1200; i++) await write({ type: "text.delta", text: `t${i}` });
  const { sink, done } = follow();
  // The first page is being read: what is published now is held, repeats included.
  await write({ type: "text.delta", text: "live" });
  hub.publish("run_1", await store.events.after("run_1", 1195, 3));
  await finish();
  await done;
  expect(sink.seqs).toEqual(Array.from({ length: 1203 }, (_, i) => i + 1));
});

it("a finished run replays from `after` and ends; at or past its end it ends at once", async () => {
  await finish();
  for (const [after, expected] of [
    [0, [1, 2]],
    [1, [2]],
    [2, []],
    [9, []],
  ] as const) {
    const { sink, done } = follow(after);
    await done;
    expect(sink.seqs).toEqual(expected);
  }
});

it("resumed past the run's last event, it still ends when the run finishes", async () => {
  const { sink, done } = follow(50);
  await turnEnd();
  await write({ type: "turn.started", turn: 1 });
  await finish();
  await done;
  expect(sink.seqs).toEqual([]);
});

it("a client not keeping up is fed from the database at its own pace, gapless, holding nothing", async () => {
  const { wrapped, reads } = observed(store);
  const { sink, done } = follow(0, { s: wrapped });
  await turnEnd();
  expect(sink.seqs).toEqual([1]);
  sink.stalled = true;
  for (let i = 0; i < 50; i++) await write({ type: "text.delta", text: `t${i}` });
  // The first event past the bound sent it back to reading, which waits for the client.
  expect(sink.seqs).toEqual([1]);
  reads.length = 0;
  sink.drain();
  await finish();
  await done;
  expect(sink.seqs).toEqual(Array.from({ length: 52 }, (_, i) => i + 1));
  expect(reads[0]).toBe(1);
});

it("closing ends the feed and unsubscribes; reasoning deltas are left out unless asked for", async () => {
  await write({ type: "reasoning.delta", text: "hmm" }, { type: "text.delta", text: "a" });
  const closed = new AbortController();
  const plain = follow(0, { closed: closed.signal });
  const withReasoning = follow(0, { reasoning: true });
  await turnEnd();
  expect(plain.sink.events.map((e) => e.type)).toEqual(["run.started", "text.delta"]);
  expect(withReasoning.sink.events.map((e) => e.type)).toEqual(["run.started", "reasoning.delta", "text.delta"]);
  closed.abort();
  await plain.done;
  expect(hub.watcherCount("run_1")).toBe(1);
  await finish();
  await withReasoning.done;
  expect(plain.sink.seqs).toEqual([1, 3]);
  expect(hub.watcherCount("run_1")).toBe(0);
});

it("caught-up watchers share each turn's events as one array; one falling behind catches up from the store while they carry on", async () => {
  const { wrapped, reads } = observed(store);
  const [a, b, slow] = [follow(0, { s: wrapped }), follow(0, { s: wrapped }), follow(0, { s: wrapped })];
  await turnEnd();
  expect(hub.watcherCount("run_1")).toBe(3);
  slow.sink.stalled = true;
  reads.length = 0;
  for (let i = 0; i < 20; i++) {
    await write({ type: "text.delta", text: `t${i}` });
    // Every publish, the two that keep up get the event, the same array handed to both.
    expect(a.sink.seqs.at(-1)).toBe(i + 2);
    expect(b.sink.written.at(-1)).toBe(a.sink.written.at(-1));
  }
  // The slow one left the live loop at its first turn behind and waits for its client.
  expect(slow.sink.seqs).toEqual([1]);
  expect(reads).toEqual([]);
  slow.sink.drain();
  await until(
    () => slow.sink.seqs.length,
    (n) => n === 21,
    "the slow watcher to catch up",
  );
  // Read from the store after the last seq it had, gapless and in order.
  expect(reads[0]).toBe(1);
  expect(slow.sink.seqs).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
  // Caught up again, it is back in the live loop: the next event is the others' array.
  await write({ type: "text.delta", text: "live again" });
  expect(slow.sink.written.at(-1)).toBe(a.sink.written.at(-1));
  await finish();
  await Promise.all([a.done, b.done, slow.done]);
  for (const { sink } of [a, b, slow]) expect(sink.seqs).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
  expect(hub.watcherCount("run_1")).toBe(0);
});

it("a gap in what the live watchers are handed is healed for each of them from the store", async () => {
  const feeds = [follow(), follow(), follow()];
  await turnEnd();
  await write({ type: "turn.started", turn: 1 });
  hub.lost.add(3);
  await write({ type: "text.delta", text: "lost live" });
  await write({ type: "text.delta", text: "after" });
  await finish();
  await Promise.all(feeds.map((f) => f.done));
  for (const { sink } of feeds) {
    expect(sink.seqs).toEqual([1, 2, 3, 4, 5]);
    expect(JSON.parse(sink.events[2]?.data ?? "{}").text).toBe("lost live");
  }
});

it("a caller that read the run gives its status and the feed reads none; a finished run whose end is not stored still ends", async () => {
  let statusReads = 0;
  const counted: Store = {
    ...store,
    runs: {
      ...store.runs,
      access: (id) => {
        statusReads++;
        return store.runs.access(id);
      },
    },
  };
  const live = follow(0, { s: counted, finished: false });
  await turnEnd();
  await write({ type: "turn.started", turn: 1 });
  await finish();
  await live.done;
  expect(statusReads).toBe(0);
  // A run marked finished without its run.finished event (as a migration of an older database
  // left runs): read from the first event, the feed ends once everything stored is sent,
  // whether the caller says it finished or the feed reads it.
  await seedSession(store, { id: "ses_2" });
  const old = runRecord({ id: "run_old", sessionId: "ses_2" });
  await store.runs.create(old, [{ type: "run.started", runId: "run_old", seq: 1, at: old.createdAt }]);
  await store.commitRun(
    "run_old",
    [
      {
        kind: "finish",
        stopReason: "aborted",
        stopDetail: null,
        error: null,
        stats: old.stats,
        finishedAt: old.createdAt,
      },
    ],
    [],
  );
  for (const finished of [true, undefined]) {
    const { sink, done } = follow(0, { s: counted, runId: "run_old", finished });
    await done;
    expect(sink.seqs).toEqual([1]);
  }
  expect(statusReads).toBe(1);
});

it("a replay while the run's oldest events are deleted (with its session) skips what is gone and ends, every read moving on", async () => {
  for (let i = 0; i < 700; i++) await write({ type: "text.delta", text: `t${i}` });
  await finish();
  // The session's delete removes a finished run's events oldest first, in pieces.
  const db = new Database(join(dir.path, "a.db"));
  db.prepare("DELETE FROM run_events WHERE run_id = 'run_1' AND seq <= 100").run();
  db.close();
  let reads = 0;
  const counted: Store = {
    ...store,
    events: {
      ...store.events,
      afterWithin: (runId, seq, bounds) => {
        // (a read that does not move on would repeat without end, starving the event loop)
        if (++reads > 20) return Promise.reject(new Error("the feed reads the same page again and again"));
        return store.events.afterWithin(runId, seq, bounds);
      },
    },
  };
  const { sink, done } = follow(0, { s: counted, finished: true });
  await done;
  expect(sink.seqs).toEqual(Array.from({ length: 602 }, (_, i) => i + 101));
  expect(reads).toBeLessThanOrEqual(3);
});

it("a feed of a run that is gone (deleted with its session) ends, with or without the caller's word on its status", async () => {
  for (const [after, finished] of [
    [0, false],
    [0, undefined],
    [3, undefined],
  ] as const) {
    const { sink, done } = follow(after, { runId: "run_gone", finished });
    const ended = await Promise.race([
      done.then(() => true),
      new Promise((resolve) => setTimeout(() => resolve(false), 2000)),
    ]);
    expect({ after, finished, ended }).toEqual({ after, finished, ended: true });
    expect(sink.events).toEqual([]);
  }
});
