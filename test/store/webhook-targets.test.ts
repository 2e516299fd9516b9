import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import { openDatabase } from "../../src/store/database.js";
import { createPgStore } from "../../src/store/pg/pg-store.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase, pipelinedPool } from "../helpers/pg-database.js";
import { allDeliveries } from "../helpers/run-lists.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

/** A store over the backend's database, counting its reads of a run's webhook target. */
interface CountingStore {
  store: Store;
  targetReads: () => number;
  /** Writes the run's stored target as `json`, as an older version would have. */
  storeTargetJson(runId: string, json: string): Promise<void>;
  close(): Promise<void>;
}

const TARGET_READ = /SELECT session_id, webhook FROM runs/;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Stores over one SQLite file, one after another (the file has one owner at a time). */
function sqliteStores(): () => CountingStore {
  const dir = tempDir("targets-");
  cleanups.push(() => dir.cleanup());
  return () => {
    const db = openDatabase({ path: join(dir.path, "agent.db") });
    let reads = 0;
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      const statement = prepare(sql);
      if (!TARGET_READ.test(sql)) return statement;
      const get = statement.get.bind(statement);
      statement.get = ((...args: unknown[]) => {
        reads++;
        return get(...args);
      }) as typeof statement.get;
      return statement;
    }) as typeof db.prepare;
    const store = createSqliteStore(db);
    const storeTargetJson = async (runId: string, json: string) => {
      db.prepare("UPDATE runs SET webhook = ? WHERE id = ?").run(json, runId);
    };
    return { store, targetReads: () => reads, storeTargetJson, close: () => store.close() };
  };
}

/** Stores over one PostgreSQL database, side by side (as two instances). */
async function pgStores(): Promise<() => CountingStore> {
  const database = await createTestPgDatabase();
  cleanups.push(() => database.drop());
  return () => {
    const pool = pipelinedPool(database.url, 4);
    pool.on("error", () => {});
    let reads = 0;
    pool.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.query = ((...args: unknown[]) => {
        if (typeof args[0] === "string" && TARGET_READ.test(args[0])) reads++;
        return query(...args);
      }) as typeof client.query;
    });
    const store = createPgStore(pool);
    const storeTargetJson = async (runId: string, json: string) => {
      await pool.query("UPDATE runs SET webhook = $1 WHERE id = $2", [json, runId]);
    };
    return { store, targetReads: () => reads, storeTargetJson, close: () => store.close() };
  };
}

const at = () => new Date().toISOString();
const webhook = {
  url: "https://hooks.example.com/in",
  events: ["run.started" as const, "approval.requested" as const, "run.finished" as const],
};
const approvalRequested = (runId: string, seq: number) =>
  ({
    type: "approval.requested",
    runId,
    seq,
    at: at(),
    toolCallId: "call_1",
    tool: "shell",
    input: {},
    reason: "r",
  }) as RunEvent;
const runFinished = (runId: string, seq: number) =>
  ({ type: "run.finished", runId, seq, at: at(), run: {} }) as RunEvent;

async function createRun(store: Store, id: string): Promise<void> {
  await seedSession(store, { id: `ses_${id}` });
  await store.runs.create(runRecord({ id, sessionId: `ses_${id}`, webhook }), [
    { type: "run.started", runId: id, seq: 1, at: at() },
  ]);
}

describe.each([
  { name: "sqlite", stores: async () => sqliteStores() },
  { name: "postgres", stores: pgStores },
])("a run's webhook target on $name", ({ stores }) => {
  it("is fixed at the run's creation: the store that created it derives every delivery without reading it", async () => {
    const open = await stores();
    const a = open();
    cleanups.push(() => a.close());
    await createRun(a.store, "run_here");
    await a.store.commitRun("run_here", [], [approvalRequested("run_here", 2)]);
    await a.store.commitRun("run_here", [finishChange()], [runFinished("run_here", 3)]);
    expect(a.targetReads()).toBe(0);
    const deliveries = await allDeliveries(a.store, "run_here");
    expect(deliveries.map((d) => [d.type, d.url])).toEqual([
      ["run.started", webhook.url],
      ["approval.requested", webhook.url],
      ["run.finished", webhook.url],
    ]);
    const now = Date.now() + 1000;
    const claimed = await a.store.webhooks.claim({ now, leaseUntil: now + 60_000, limit: 10, perOwner: 10 });
    const finished = claimed.find((d) => d.id === deliveries[2]?.id);
    expect(JSON.parse(finished?.body ?? "{}")).toMatchObject({ data: { sessionId: "ses_run_here" } });
  });

  it("a store that did not create the run (a restart, another instance) reads it once, for the run's whole life", async () => {
    const open = await stores();
    const a = open();
    await createRun(a.store, "run_there");
    // SQLite has one owner at a time: the creator closes first; PostgreSQL's instances run side by side.
    await a.close();
    const b = open();
    cleanups.push(() => b.close());
    await b.store.commitRun("run_there", [], [approvalRequested("run_there", 2)]);
    await b.store.commitRun("run_there", [finishChange()], [runFinished("run_there", 3)]);
    expect(b.targetReads()).toBe(1);
    const deliveries = await allDeliveries(b.store, "run_there");
    expect(deliveries.map((d) => [d.type, d.url])).toEqual([
      ["run.started", webhook.url],
      ["approval.requested", webhook.url],
      ["run.finished", webhook.url],
    ]);
  });

  it("records whether it is the server's default (WEBHOOK_URL); one stored without that reads as unknown, the flag absent", async () => {
    const open = await stores();
    const a = open();
    cleanups.push(() => a.close());
    const create = async (id: string, target?: Parameters<typeof runRecord>[0]["webhook"]) => {
      await seedSession(a.store, { id: `ses_${id}` });
      const record = runRecord({ id, sessionId: `ses_${id}`, webhook: target });
      await a.store.runs.create(record, [{ type: "run.started", runId: id, seq: 1, at: at() }]);
    };
    await create("run_own", webhook);
    await create("run_default", { ...webhook, serverDefault: true });
    await create("run_older", webhook);
    await a.storeTargetJson("run_older", JSON.stringify(webhook));
    await create("run_none");
    expect(await a.store.webhooks.targetOf("run_own")).toEqual({ ...webhook, serverDefault: false });
    expect(await a.store.webhooks.targetOf("run_default")).toEqual({ ...webhook, serverDefault: true });
    expect(await a.store.webhooks.targetOf("run_older")).toStrictEqual(webhook);
    expect((await a.store.runs.get("run_older"))?.webhook).toStrictEqual(webhook);
    expect(await a.store.webhooks.targetOf("run_none")).toBeNull();
    expect(await a.store.webhooks.targetOf("run_missing")).toBeNull();
  });
});
