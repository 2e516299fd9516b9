import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { followRunEvents } from "../../src/runs/event-feed.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { CollectingSink, finishRun, writeEvents } from "../helpers/event-streams.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir>;
let store: Store;
let hub: EventHub;
let recorder: RunRecorder;

beforeEach(async () => {
  dir = tempDir();
  store = openSqliteStore({ path: join(dir.path, "a.db") });
  hub = new EventHub();
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

const turnEnd = () => new Promise((resolve) => setImmediate(resolve));

it("a live watcher whose client is behind when run.finished is published still ends once the run is deleted with its session", async () => {
  // A watcher of a running run (the caller read it unfinished), caught up and live.
  const sink = new CollectingSink();
  const closed = new AbortController();
  const done = followRunEvents({ store, hub, runId: "run_1", after: 0, closed: closed.signal, sink });
  await turnEnd();
  await writeEvents(recorder, { type: "text.delta", text: "a" });
  expect(sink.seqs).toEqual([1, 2]);
  // Its client stops reading (more than MAX_HELD_BYTES wait for its socket) just as the run ends:
  // the run.finished publish sends it back to reading from the store, which waits for the client.
  sink.stalled = true;
  await finishRun(recorder);
  // The session is deleted (its run has finished: DELETE /sessions/{id} goes through), events and all.
  expect(await store.sessions.delete("ses_1")).toBe(true);
  // The client reads again: there is nothing left to send, and the run is gone; the stream must end.
  sink.drain();
  const ended = await Promise.race([
    done.then(() => "ended"),
    new Promise((resolve) => setTimeout(() => resolve("still open after 3 s"), 3000)),
  ]);
  closed.abort();
  await done;
  expect(ended).toBe("ended");
});
