import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import { listenerName } from "../../src/store/pg/pg-listener.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import type { NotificationHandlers, Store } from "../../src/store/store.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { STORE_BACKENDS } from "../helpers/store-backends.js";

const at = () => new Date().toISOString();
const delta = (runId: string, seq: number): RunEvent => ({ type: "text.delta", text: `t${seq}`, runId, seq, at: at() });

/** Collects what a store's notifications deliver, and lets a test wait for it. */
function collect(store: Store) {
  const seen: string[] = [];
  let resyncs = 0;
  const waiters: (() => void)[] = [];
  const note = (entry: string) => {
    seen.push(entry);
    for (const wake of waiters.splice(0)) wake();
  };
  const handlers: NotificationHandlers = {
    events: (runId, seq) => note(`events ${runId}:${seq}`),
    control: (runId) => note(`control ${runId}`),
    resync: () => {
      resyncs++;
      note("resync");
    },
  };
  const unsubscribe = store.notifications?.subscribe(handlers);
  return {
    seen,
    resyncs: () => resyncs,
    unsubscribe: () => unsubscribe?.(),
    async until(predicate: () => boolean, ms = 5000): Promise<void> {
      const deadline = Date.now() + ms;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`not seen in time; got: ${seen.join(", ")}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
  };
}

describe("notifications between two PostgreSQL stores over one database (two instances)", () => {
  let database: TestPgDatabase;
  let a: Store;
  let b: Store;
  beforeAll(async () => {
    database = await createTestPgDatabase();
    a = await openPgStore({ url: database.url, maxConnections: 4 });
    b = await openPgStore({ url: database.url, maxConnections: 4 });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  it("a commit of events is announced with its run and last seq once committed; a refused batch announces nothing", async () => {
    const heard = collect(b);
    await heard.until(() => heard.resyncs() > 0);
    expect(b.notifications?.connected).toBe(true);
    await seedSession(a, { id: "ses_n1" });
    await a.runs.create(runRecord({ id: "run_n1", sessionId: "ses_n1" }), [
      { type: "run.started", runId: "run_n1", seq: 1, at: at() },
    ]);
    await a.commitRun("run_n1", [], [delta("run_n1", 2), delta("run_n1", 3)]);
    // A seq taken twice: the batch is refused, nothing is announced.
    await expect(a.commitRun("run_n1", [], [delta("run_n1", 3), delta("run_n1", 4)])).rejects.toThrow();
    await a.commitRun("run_n1", [], [delta("run_n1", 4)]);
    await heard.until(() => heard.seen.includes("events run_n1:4"));
    expect(heard.seen.filter((s) => s.startsWith("events"))).toEqual([
      "events run_n1:1",
      "events run_n1:3",
      "events run_n1:4",
    ]);
    heard.unsubscribe();
  });

  it("a stored request wakes with the run's id on the control channel; a refused one wakes nobody", async () => {
    const heard = collect(b);
    await heard.until(() => b.notifications?.connected === true);
    const finish = finishChange("aborted");
    await seedSession(a, { id: "ses_n2" });
    await a.runs.create(runRecord({ id: "run_n2", sessionId: "ses_n2" }), [
      { type: "run.started", runId: "run_n2", seq: 1, at: at() },
    ]);
    await a.commitRun("run_n2", [finish], []);
    // Finished: a second end is refused, and so nothing is announced.
    await expect(a.commitRequest("run_n2", [finish])).rejects.toThrow();
    await a.commitRequest("run_n1", [{ kind: "cancelRequested", at: at() }]);
    await heard.until(() => heard.seen.includes("control run_n1"));
    expect(heard.seen.filter((s) => s.startsWith("control"))).toEqual(["control run_n1"]);
    heard.unsubscribe();
  });

  it("the listening connection terminated: the listener reconnects, says to resync, and hears commits again", async () => {
    const heard = collect(b);
    await heard.until(() => heard.resyncs() > 0 || b.notifications?.connected === true);
    const before = heard.resyncs();
    // Only b listens (nothing subscribed to a's notifications), under this process's name.
    expect(await terminateListener(database.url)).toBe(true);
    await heard.until(() => heard.resyncs() > before, 10_000);
    await a.commitRun("run_n1", [], [delta("run_n1", 5)]);
    await heard.until(() => heard.seen.includes("events run_n1:5"));
    heard.unsubscribe();
  });

  it("a store with nobody else on its database (SQLite) has no notifications", async () => {
    const sqlite = STORE_BACKENDS.find((backend) => backend.name === "sqlite");
    const opened = await sqlite?.open();
    expect(opened?.store.notifications).toBeNull();
    await opened?.dispose();
  });
});

/** Terminates the listening connection of this process. */
async function terminateListener(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1`,
      [listenerName()],
    );
    return rows[0]?.ok === true;
  } finally {
    await client.end();
  }
}
