import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import { createLogger } from "../../src/logger.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { EventRelay } from "../../src/runs/event-relay.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import type { RunNotifications, Store, StoredEvent } from "../../src/store/store.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** Notifications whose listening connection is down for good: nothing is heard. */
const deaf: RunNotifications = { connected: false, subscribe: () => () => {}, close: async () => {} };

const at = () => new Date().toISOString();
const delta = (runId: string, seq: number): RunEvent => ({ type: "text.delta", text: `t${seq}`, runId, seq, at: at() });

describe.each(STORE_BACKENDS)("the event relay without notifications, on $name", (backend) => {
  let opened: OpenedBackend | null = null;
  let relay: EventRelay | null = null;
  afterEach(async () => {
    relay?.stop();
    await opened?.dispose();
  });

  it("its poll publishes what another instance commits to the watchers here, in order, once each", async () => {
    opened = await backend.open();
    const { store } = opened;
    await seedSession(store, { id: "ses_relay" });
    await store.runs.create(runRecord({ id: "run_relay", sessionId: "ses_relay" }), [
      { type: "run.started", runId: "run_relay", seq: 1, at: at() },
    ]);
    const hub = new EventHub();
    relay = new EventRelay({
      store,
      hub,
      notifications: deaf,
      isLocal: () => false,
      logger: createLogger({ level: "silent" }),
      downPollMs: 50,
    });
    relay.start();
    const seen: StoredEvent[] = [];
    hub.subscribe("run_relay", (event) => seen.push(event));
    for (let seq = 2; seq <= 6; seq++) await store.commitRun("run_relay", [], [delta("run_relay", seq)]);
    const deadline = Date.now() + 5000;
    while (seen.at(-1)?.seq !== 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // The first read starts at the last stored event (a watcher's gap shows there), then each once.
    const seqs = seen.map((e) => e.seq);
    expect(seqs.at(-1)).toBe(6);
    expect(seqs).toEqual([...new Set(seqs)].sort((x, y) => x - y));
    expect(seqs[0]).toBeLessThanOrEqual(2);
  });
  it("reads a run this process gave up unfinished as soon as it is told (left), not at its next poll", async () => {
    opened = await backend.open();
    const { store } = opened;
    await seedSession(store, { id: "ses_left" });
    await store.runs.create(runRecord({ id: "run_left", sessionId: "ses_left" }), [
      { type: "run.started", runId: "run_left", seq: 1, at: at() },
    ]);
    let local = true;
    const hub = new EventHub();
    relay = new EventRelay({
      store,
      hub,
      notifications: deaf,
      isLocal: () => local,
      logger: createLogger({ level: "silent" }),
      // No poll during the test: only `left` can make the relay read.
      downPollMs: 600_000,
    });
    relay.start();
    const seen: number[] = [];
    hub.subscribe("run_left", (event) => seen.push(event.seq));
    // Executed here meanwhile: nothing is read (its recorder publishes), while another instance
    // that took it over commits.
    for (let seq = 2; seq <= 4; seq++) await store.commitRun("run_left", [], [delta("run_left", seq)]);
    local = false;
    relay.left("run_left");
    const deadline = Date.now() + 5000;
    while (seen.at(-1) !== 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // The read starts at the last stored event: a watcher's gap shows there.
    expect(seen).toEqual([4]);
  });
  it("reads a burst of large events in pages of at most 1 MiB, publishing each once, in order", async () => {
    opened = await backend.open();
    const { store } = opened;
    await seedSession(store, { id: "ses_burst" });
    await store.runs.create(runRecord({ id: "run_burst", sessionId: "ses_burst" }), [
      { type: "run.started", runId: "run_burst", seq: 1, at: at() },
    ]);
    // What each read returned, in bytes: the relay reads through the store it is given.
    const readBytes: number[] = [];
    const sized = (events: StoredEvent[]) => readBytes.push(events.reduce((sum, e) => sum + e.data.length, 0));
    const watched: Store = {
      ...store,
      events: {
        ...store.events,
        after: async (...args) => {
          const events = await store.events.after(...args);
          sized(events);
          return events;
        },
        afterWithin: async (...args) => {
          const page = await store.events.afterWithin(...args);
          sized(page.events);
          return page;
        },
      },
    };
    const hub = new EventHub();
    relay = new EventRelay({
      store: watched,
      hub,
      notifications: deaf,
      isLocal: () => false,
      logger: createLogger({ level: "silent" }),
      downPollMs: 200,
    });
    relay.start();
    const seen: number[] = [];
    hub.subscribe("run_burst", (event) => seen.push(event.seq));
    while (!seen.includes(1)) await new Promise((r) => setTimeout(r, 10));
    // Another instance commits 40 events of 256 KB (a tenant's steered inputs, say) between two polls.
    const big = "x".repeat(256 * 1024);
    const burst: RunEvent[] = [];
    for (let seq = 2; seq <= 41; seq++)
      burst.push({ type: "text.delta", text: big, runId: "run_burst", seq, at: at() });
    await store.commitRun("run_burst", [], burst);
    const deadline = Date.now() + 10_000;
    while (seen.at(-1) !== 41 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(seen.slice(seen.indexOf(2))).toEqual(burst.map((e) => e.seq));
    // Before, one read held all 10 MB; now a page is 1 MiB at most (four events of 256 KB).
    expect(Math.max(...readBytes)).toBeLessThanOrEqual((1 << 20) + 1024);
    expect(readBytes.filter((bytes) => bytes > 0).length).toBeGreaterThanOrEqual(10);
  });
});

describe("the event relay over two PostgreSQL stores on one database (two instances)", () => {
  let database: TestPgDatabase | null = null;
  const stores: Store[] = [];
  let relay: EventRelay | null = null;
  afterEach(async () => {
    relay?.stop();
    for (const store of stores.splice(0)) await store.close();
    await database?.drop();
  });

  it("three watchers of one run: one read of the database per notification, each watcher gets every event once", async () => {
    database = await createTestPgDatabase();
    const a = await openPgStore({ url: database.url, maxConnections: 2 });
    const b = await openPgStore({ url: database.url, maxConnections: 2 });
    stores.push(a, b);
    let reads = 0;
    const afterWithin: Store["events"]["afterWithin"] = (...args) => {
      reads++;
      return b.events.afterWithin(...args);
    };
    const counted: Store = { ...b, events: { ...b.events, afterWithin } };
    await seedSession(a, { id: "ses_fan" });
    await a.runs.create(runRecord({ id: "run_fan", sessionId: "ses_fan" }), [
      { type: "run.started", runId: "run_fan", seq: 1, at: at() },
    ]);
    const hub = new EventHub();
    relay = new EventRelay({
      store: counted,
      hub,
      notifications: b.notifications as RunNotifications,
      isLocal: () => false,
      logger: createLogger({ level: "silent" }),
    });
    relay.start();
    const watchers = [[], [], []].map((seen: number[]) => {
      hub.subscribe("run_fan", (event) => seen.push(event.seq));
      return seen;
    });
    const until = async (seq: number) => {
      const deadline = Date.now() + 5000;
      while (!watchers.every((seen) => seen.includes(seq)) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    await until(1);
    while (!b.notifications?.connected) await new Promise((r) => setTimeout(r, 10));
    const before = reads;
    for (let seq = 2; seq <= 6; seq++) {
      await a.commitRun("run_fan", [], [delta("run_fan", seq)]);
      await until(seq);
    }
    for (const seen of watchers) expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
    // Five commits: five reads (one more if the listener's first resync came after `before`),
    // where a reader per watcher would make fifteen.
    expect(reads - before).toBeGreaterThanOrEqual(5);
    expect(reads - before).toBeLessThanOrEqual(6);
  });
});
