import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { followRunEvents } from "../../src/runs/event-feed.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { EventRelay, waitForRelayedEnd } from "../../src/runs/event-relay.js";
import { runEventStream } from "../../src/runs/event-stream.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import type { NotificationHandlers, RunAccess, RunNotifications } from "../../src/store/store.js";
import { CollectingSink, finishRun, writeEvents } from "../helpers/event-streams.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** Notifications the test sends itself (the listening connection is up: no poll reads). */
function handNotifications(): RunNotifications & { handlers: NotificationHandlers } {
  const notifications = {
    connected: true,
    handlers: {} as NotificationHandlers,
    subscribe(handlers: NotificationHandlers) {
      notifications.handlers = handlers;
      return () => {};
    },
    close: async () => {},
  };
  return notifications;
}

const turnEnd = () => new Promise((resolve) => setImmediate(resolve));

describe.each(STORE_BACKENDS)("a run deleted with its session before the relay read its end, on $name", (backend) => {
  let opened: OpenedBackend | null = null;
  let relay: EventRelay | null = null;
  afterEach(async () => {
    relay?.stop();
    await opened?.dispose();
  });

  it("is announced gone: the feeds and waits of its watchers here end", async () => {
    opened = await backend.open();
    const { store } = opened;
    // Every lookup the relay (and the waits) make of the run, with what it found.
    const lookups: (RunAccess | null)[] = [];
    const access = store.runs.access.bind(store.runs);
    store.runs.access = async (id) => {
      const found = await access(id);
      lookups.push(found);
      return found;
    };
    await seedSession(store, { id: "ses_1" });
    const record = runRecord({ id: "run_1", sessionId: "ses_1" });
    await store.runs.create(record, [{ type: "run.started", runId: "run_1", seq: 1, at: record.createdAt }]);
    // The run executes elsewhere: its recorder publishes on another instance's hub.
    const recorder = await RunRecorder.open({ store, hub: new EventHub(), runId: "run_1", sessionId: "ses_1" });
    const hub = new EventHub();
    const notifications = handNotifications();
    const logger = createLogger({ level: "silent" });
    relay = new EventRelay({ store, hub, notifications, isLocal: () => false, logger, safetyPollMs: 3_600_000 });
    relay.start();

    const closed = new AbortController();
    const sink = new CollectingSink();
    const feed = followRunEvents({ store, hub, runId: "run_1", after: 0, closed: closed.signal, sink });
    const frames: string[] = [];
    const chat = (async () => {
      for await (const frame of runEventStream({ store, hub, runId: "run_1", after: 0, closed: closed.signal })) {
        frames.push(frame.id);
      }
    })();
    const waited = waitForRelayedEnd({ store, hub, runId: "run_1" });
    let ended = false;
    void Promise.all([feed, chat, waited]).then(() => {
      ended = true;
    });
    // The feed, the stream and the wait each looked the run up once.
    while (sink.seqs.length === 0 || frames.length === 0 || lookups.length < 3) await turnEnd();

    // A read that finds nothing new of a run still stored announces nothing.
    const seen = lookups.length;
    notifications.handlers.resync?.();
    while (lookups.length === seen) await turnEnd();
    expect(lookups.at(-1)).not.toBeNull();
    await turnEnd();
    expect(ended).toBe(false);

    // Elsewhere the run goes on, ends, and its session is deleted, before the relay reads any of it.
    await writeEvents(recorder, { type: "text.delta", text: "a" });
    await finishRun(recorder);
    recorder.dispose();
    expect(await store.sessions.delete("ses_1")).toBe(true);
    notifications.handlers.events?.("run_1", 3);

    await Promise.all([feed, chat, waited]);
    expect(sink.seqs).toEqual([1]);
    expect(frames).toEqual(["1"]);
    closed.abort();
  });
});
