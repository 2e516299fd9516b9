/**
 * A recorder opened without the session's last message seq (`lastMessage: null`: a start
 * whose history read failed) reads it at its first write: opening reads nothing and cannot
 * fail, a failed read fails that write alone (nothing of it stored, its events kept), and the
 * messages it writes then follow the session's last one.
 */
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { StorageError } from "../../src/store/errors.js";
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
  await store.close();
  dir.cleanup();
});

it("reads the last message seq at the first write; a failed read fails that write and loses nothing", async () => {
  const hub = new EventHub();
  const first = await RunRecorder.open({ store, hub, runId: "run_1", sessionId: "ses_1", lastMessage: 0 });
  await first.commitMessage({ id: "msg_1", role: "user", content: "one" });
  first.dispose();

  let reads = 0;
  let failNext = true;
  const failing: Store = {
    ...store,
    messages: {
      ...store.messages,
      lastSeq: (sessionId) => {
        reads++;
        if (failNext) {
          failNext = false;
          return Promise.reject(new StorageError("io", "disk I/O error"));
        }
        return store.messages.lastSeq(sessionId);
      },
    },
  };
  const recorder = await RunRecorder.open({
    store: failing,
    hub,
    runId: "run_1",
    sessionId: "ses_1",
    lastEvent: await store.events.lastSeq("run_1"),
    lastMessage: null,
  });
  expect(reads).toBe(0);
  const eventsBefore = (await store.events.after("run_1", 0)).length;
  recorder.buffer({ type: "text.delta", text: "kept" });
  await expect(recorder.commitMessage({ id: "msg_2", role: "assistant", content: "two" })).rejects.toBeInstanceOf(
    StorageError,
  );
  expect((await store.events.after("run_1", 0)).length).toBe(eventsBefore);
  const stored = await recorder.commitMessage({ id: "msg_2", role: "assistant", content: "two" });
  expect(stored.seq).toBe(2);
  expect(reads).toBe(2);
  const events = await store.events.after("run_1", 0);
  expect(events.slice(eventsBefore).map((e) => e.type)).toEqual(["text.delta", "message"]);
  await recorder.commitMessage({ id: "msg_3", role: "user", content: "three" });
  expect(reads).toBe(2);
  recorder.dispose();
});
