import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { RunEventBody } from "../../src/domain/run-events.js";
import { AdmissionWatch } from "../../src/runs/admission-watch.js";
import { followRunEvents } from "../../src/runs/event-feed.js";
import { runEventStream } from "../../src/runs/event-stream.js";
import { MAX_HELD_BYTES } from "../../src/runs/held-events.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store, StoredEvent } from "../../src/store/store.js";
import { CollectingSink, finishRun, LossyHub, writeEvents } from "../helpers/event-streams.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { aroundStore } from "../helpers/store-around.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir>;
let store: Store;
let hub: LossyHub;
let recorder: RunRecorder;
let admitted: StoredEvent[];

const write = (...events: RunEventBody[]) => writeEvents(recorder, ...events);

/** A feed of run_1 from its start over the store with its event reads recorded (their resume points). */
function follow(admission?: AdmissionWatch) {
  const reads: number[] = [];
  const observed = aroundStore(store, "events", (name, args, call) => {
    if (name === "afterWithin") reads.push(args[1] as number);
    return call();
  });
  const sink = new CollectingSink();
  const done = followRunEvents({
    store: observed,
    hub,
    runId: "run_1",
    after: 0,
    closed: new AbortController().signal,
    sink,
    finished: false,
    admission,
  });
  return { sink, done, reads };
}

beforeEach(async () => {
  dir = tempDir();
  store = openSqliteStore({ path: join(dir.path, "a.db") });
  hub = new LossyHub();
  await seedSession(store, { id: "ses_1" });
  const record = runRecord({ id: "run_1", sessionId: "ses_1" });
  admitted = await store.runs.create(record, [{ type: "run.started", runId: "run_1", seq: 1, at: record.createdAt }]);
  recorder = await RunRecorder.open({ store, hub, runId: "run_1", sessionId: "ses_1", lastEvent: 1 });
});
afterEach(async () => {
  recorder.dispose();
  await store.close();
  dir.cleanup();
});

it("a feed begins with what the watch held since its run's admission, reads nothing from the store, and goes live", async () => {
  const watch = new AdmissionWatch(hub);
  watch.admitted("run_1", admitted);
  await write({ type: "turn.started", turn: 1 });
  await write({ type: "text.delta", text: "held" });
  const { sink, done, reads } = follow(watch);
  // Sent at once, from what the watch held; its subscription is gone, the feed's own remains.
  expect(sink.seqs).toEqual([1, 2, 3]);
  expect(hub.watcherCount("run_1")).toBe(1);
  await write({ type: "text.delta", text: "live" });
  expect(sink.seqs).toEqual([1, 2, 3, 4]);
  await finishRun(recorder);
  await done;
  expect(sink.events.map((e) => e.type)).toEqual([
    "run.started",
    "turn.started",
    "text.delta",
    "text.delta",
    "run.finished",
  ]);
  expect(reads).toEqual([]);
  expect(hub.watchedRuns()).toEqual([]);
});

it("a run that finished while the watch held its events ends the feed with them, nothing read", async () => {
  const watch = new AdmissionWatch(hub);
  watch.admitted("run_1", admitted);
  await write({ type: "turn.started", turn: 1 });
  await finishRun(recorder);
  const { sink, done, reads } = follow(watch);
  await done;
  expect(sink.seqs).toEqual([1, 2, 3]);
  expect(reads).toEqual([]);
  expect(hub.watchedRuns()).toEqual([]);
});

it("a gap in what the watch held sends the feed to the store, which fills it, gapless and in order", async () => {
  const watch = new AdmissionWatch(hub);
  watch.admitted("run_1", admitted);
  hub.lost.add(2);
  await write({ type: "turn.started", turn: 1 });
  await write({ type: "text.delta", text: "after the gap" });
  const { sink, done, reads } = follow(watch);
  await finishRun(recorder);
  await done;
  expect(sink.seqs).toEqual([1, 2, 3, 4]);
  // What the watch held in order (seq 1) was sent; the store was read from there.
  expect(reads[0]).toBe(1);
});

it("a watch that held more than a watcher may holds nothing: the feed reads the run from its start", async () => {
  const watch = new AdmissionWatch(hub);
  watch.admitted("run_1", admitted);
  await write({ type: "text.delta", text: "x".repeat(MAX_HELD_BYTES + 1) });
  await write({ type: "text.delta", text: "y" });
  const { sink, done, reads } = follow(watch);
  await finishRun(recorder);
  await done;
  expect(sink.seqs).toEqual([1, 2, 3, 4]);
  expect(reads[0]).toBe(0);
  expect(hub.watchedRuns()).toEqual([]);
});

it("a watch gives nothing for a run it did not see admitted, nor twice, and lets go of its subscription", async () => {
  const watch = new AdmissionWatch(hub);
  expect(watch.take("run_1")).toBeNull();
  watch.admitted("run_1", admitted);
  // Subscribed, but standing for no watcher (metrics count the stream that takes it over).
  expect(hub.watchedRuns()).toEqual(["run_1"]);
  expect(hub.watcherCount("run_1")).toBe(0);
  expect(watch.take("run_2")).toBeNull();
  expect(hub.watchedRuns()).toEqual([]);
  watch.admitted("run_1", admitted);
  expect(watch.take("run_1")?.map((e) => e.seq)).toEqual([1]);
  expect(watch.take("run_1")).toBeNull();
  watch.admitted("run_1", admitted);
  watch.release();
  expect(hub.watchedRuns()).toEqual([]);
});

/** The generator's stream of run_1 from its start (what a chat streams), with its event reads recorded. */
async function streamAll(admission: AdmissionWatch) {
  const reads: number[] = [];
  const observed = aroundStore(store, "events", (name, args, call) => {
    if (name === "afterWithin") reads.push(args[1] as number);
    return call();
  });
  const stream = runEventStream({
    store: observed,
    hub,
    runId: "run_1",
    after: 0,
    closed: new AbortController().signal,
    finished: false,
    admission,
  });
  const seqs: number[] = [];
  const first = await stream.next();
  if (!first.done) seqs.push(Number(first.value.id));
  await write({ type: "text.delta", text: "live" });
  await finishRun(recorder);
  for await (const frame of stream) seqs.push(Number(frame.id));
  return { seqs, reads };
}

it("the generator's stream (a chat's) also begins with what the watch held, reading nothing, or reads at a gap", async () => {
  const watch = new AdmissionWatch(hub);
  watch.admitted("run_1", admitted);
  await write({ type: "turn.started", turn: 1 });
  const whole = await streamAll(watch);
  expect(whole.seqs).toEqual([1, 2, 3, 4]);
  expect(whole.reads).toEqual([]);
  expect(hub.watchedRuns()).toEqual([]);
});

it("the generator's stream reads the store where what the watch held has a gap", async () => {
  const watch = new AdmissionWatch(hub);
  watch.admitted("run_1", admitted);
  hub.lost.add(2);
  await write({ type: "turn.started", turn: 1 });
  const healed = await streamAll(watch);
  expect(healed.seqs).toEqual([1, 2, 3, 4]);
  expect(healed.reads[0]).toBe(1);
});
