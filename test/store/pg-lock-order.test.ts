import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { until } from "../helpers/until.js";

const at = () => new Date().toISOString();

/**
 * Writers that lock several runs' rows take them in run id order, as a group commit's fences
 * do (its batches go in run id order): a lease renewal or release running beside a group
 * never deadlocks with it (PostgreSQL would abort one of the two after deadlock_timeout, the
 * group's runs stalled meanwhile).
 */
describe("PostgreSQL: lease writers lock runs in id order, as a group commit does", () => {
  let database: TestPgDatabase;
  let store: Store;
  let group: pg.Client;
  let watcher: pg.Client;
  beforeEach(async () => {
    database = await createTestPgDatabase();
    store = await openPgStore({ url: database.url, maxConnections: 4 });
    group = new pg.Client({ connectionString: database.url });
    watcher = new pg.Client({ connectionString: database.url });
    await group.connect();
    await watcher.connect();
  });
  afterEach(async () => {
    await group?.end();
    await watcher?.end();
    await store?.close();
    await database?.drop();
  });

  /** Runs `low` < `high` held by `owner`, `high` created first (so it comes first in the table's heap). */
  async function heldRuns(owner: string) {
    const [low, high] = ["run_lockorder_1", "run_lockorder_2"];
    for (const [runId, sessionId] of [
      [high, "ses_lockorder_2"],
      [low, "ses_lockorder_1"],
    ] as const) {
      await seedSession(store, { id: sessionId });
      await store.runs.create(runRecord({ id: runId, sessionId }), [{ type: "run.started", runId, seq: 1, at: at() }], {
        lease: { owner, ttlMs: 3_600_000 },
      });
    }
    return { low, high };
  }

  /** Whether a statement of the store starting with `prefix` waits for a row lock. */
  const waitsForLock = async (prefix: string) =>
    (
      await watcher.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
         AND query LIKE $1`,
        [`${prefix}%`],
      )
    ).rowCount === 1;

  const writers: [string, string, (owner: string, runIds: string[]) => Promise<unknown>][] = [
    [
      "a renewal",
      "UPDATE runs SET lease_expires_at",
      (owner, runIds) => store.leases.renew({ owner, ttlMs: 60_000, runIds }),
    ],
    ["a release", "UPDATE runs SET owner_instance = NULL", (owner) => store.leases.release(owner)],
  ];
  it.each(writers)("%s beside a group holding the lower run, then taking the higher", async (_, prefix, write) => {
    const { low, high } = await heldRuns("inst_a");
    // The group's fences, in run id order: the lower run locked first.
    await group.query("BEGIN");
    await group.query("UPDATE runs SET epoch = epoch WHERE id = $1", [low]);
    const written = write("inst_a", [low, high]);
    written.catch(() => {});
    await until(
      () => waitsForLock(prefix),
      (waiting) => waiting,
      "the writer to wait for the lower run",
    );
    // The group's next fence: the writer must not hold the higher run while it waits for the lower.
    await group.query("UPDATE runs SET epoch = epoch WHERE id = $1", [high]);
    await group.query("COMMIT");
    await expect(written).resolves.toBeDefined();
  });
});
