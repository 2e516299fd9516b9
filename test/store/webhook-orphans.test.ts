import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/database.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

/** A store, and a read of its webhook_deliveries row by id (null: none). */
interface Opened {
  store: Store;
  row(id: string): Promise<{ run_id: string | null; status: string; body: string } | null>;
  dispose(): Promise<void>;
}

const BACKENDS: { name: string; open(): Promise<Opened> }[] = [
  {
    name: "sqlite",
    async open() {
      const dir = tempDir("webhook-orphans-");
      const db = openDatabase({ path: join(dir.path, "agent.db") });
      const store = createSqliteStore(db);
      const byId = db.prepare("SELECT run_id, status, body FROM webhook_deliveries WHERE id = ?");
      return {
        store,
        row: async (id) => (byId.get(id) as Awaited<ReturnType<Opened["row"]>>) ?? null,
        async dispose() {
          await store.close();
          dir.cleanup();
        },
      };
    },
  },
  {
    name: "postgres",
    async open() {
      const database = await createTestPgDatabase();
      const store = await openPgStore({ url: database.url, maxConnections: 4 });
      const pool = new pg.Pool({ connectionString: database.url, max: 1 });
      return {
        store,
        row: async (id) =>
          (await pool.query("SELECT run_id, status, body FROM webhook_deliveries WHERE id = $1", [id])).rows[0] ?? null,
        async dispose() {
          await pool.end();
          await store.close();
          await database.drop();
        },
      };
    },
  },
];

/**
 * A session's delete takes its runs, but not what their receivers are still owed: the runs'
 * pending deliveries stay in the outbox (run_id NULL) and are claimed, tried and settled as any
 * other; the settled ones go with their run, and an orphan goes once it settles.
 */
describe.each(BACKENDS)("webhook deliveries of a deleted session's runs on $name", (backend) => {
  let opened: Opened;
  beforeAll(async () => {
    opened = await backend.open();
  });
  afterAll(() => opened?.dispose());

  it("pending ones are still claimed, with their owner and body, and dropped once settled; settled ones go with the run", async () => {
    const { store } = opened;
    const owner = "key_orphans";
    const sessionId = "ses_orphans";
    await seedSession(store, { id: sessionId, owner });
    const webhook = { url: "https://hooks.example.com/in", events: ["run.started" as const] };
    const runs = ["run_orph_1", "run_orph_2", "run_orph_3"];
    for (const runId of runs) {
      await store.runs.create(runRecord({ id: runId, sessionId, webhook }), [
        { type: "run.started", runId, seq: 1, at: new Date().toISOString() },
      ]);
      await store.commitRun(runId, [finishChange()], []);
    }
    const now = Date.now();
    const claimed = await store.webhooks.claim({ now, leaseUntil: now + 60_000, limit: 10, perOwner: 10 });
    expect(claimed.map((d) => d.runId).sort()).toEqual(runs);
    const [delivered, retried, expired] = runs.map((runId) => claimed.find((d) => d.runId === runId)?.id as string);
    const at = new Date(now).toISOString();
    await store.webhooks.record({
      id: delivered as string,
      attempt: { at, statusCode: 200, error: null },
      next: { status: "delivered" },
    });
    for (const id of [retried, expired] as string[])
      await store.webhooks.release({ id, leaseUntil: now + 60_000, at: now });

    expect(await store.sessions.delete(sessionId)).toBe(true);
    expect(await opened.row(delivered as string)).toBeNull();
    expect(await opened.row(retried as string)).toMatchObject({ run_id: null, status: "pending" });

    const again = await store.webhooks.claim({ now: now + 1, leaseUntil: now + 60_000, limit: 10, perOwner: 10 });
    expect(again.map((d) => d.id).sort()).toEqual([retried, expired].sort());
    for (const delivery of again) {
      expect(delivery).toMatchObject({ runId: null, owner, url: webhook.url, status: "pending" });
      expect(JSON.parse(delivery.body)).toMatchObject({ type: "run.started", data: { sessionId } });
    }
    // A failed try leaves it pending, due again; its next 2xx settles it, and it goes.
    await store.webhooks.record({
      id: retried as string,
      attempt: { at, statusCode: 500, error: null },
      next: { status: "pending", at: now + 2 },
    });
    expect(await opened.row(retried as string)).toMatchObject({ run_id: null, status: "pending" });
    await store.webhooks.record({
      id: retried as string,
      attempt: { at, statusCode: 200, error: null },
      next: { status: "delivered" },
    });
    expect(await opened.row(retried as string)).toBeNull();
    // Given up untried (its window closed): it goes too.
    const gaveUp = await store.webhooks.expire({ id: expired as string, leaseUntil: now + 60_000, reason: "late", at });
    expect(gaveUp).toBe(true);
    expect(await opened.row(expired as string)).toBeNull();
  });
});
