import type pg from "pg";
import { afterEach, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import { StorageError } from "../../src/store/errors.js";
import { createPgStore } from "../../src/store/pg/pg-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase, pipelinedPool, type TestPgDatabase } from "../helpers/pg-database.js";
import { runRecord, seedSession } from "../helpers/seed.js";

/**
 * Real PostgreSQL: a group of two runs' batches whose COMMIT is carried out and whose answer is
 * then lost (node-postgres: "Connection terminated unexpectedly", which the store reports as
 * StorageError `outcomeUnknown`, as it does for a lone write). GroupCommit ran each batch again
 * alone; both were already stored, so each run's writer was told a duplicate-key error: a
 * definite failure it kept its events for (and retried under the same seqs), instead of
 * `outcomeUnknown`, on which the recorder seals the run and leaves it to recovery. Now each
 * batch of such a group is told `outcomeUnknown`, and none runs again.
 */
let database: TestPgDatabase | undefined;
let pool: pg.Pool | undefined;
let store: Store | undefined;
afterEach(async () => {
  await store?.close().catch(() => {});
  await database?.drop();
  store = undefined;
  pool = undefined;
  database = undefined;
});

const delta = (runId: string, seq: number): RunEvent => ({
  type: "text.delta",
  text: "x",
  runId,
  seq,
  at: new Date().toISOString(),
});

async function settle(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return "stored";
  } catch (err) {
    return err;
  }
}

it("each run of a group whose COMMIT answer was lost is told outcomeUnknown, as a lone write is", async () => {
  database = await createTestPgDatabase();
  pool = pipelinedPool(database.url, 4);
  pool.on("error", () => {});
  const state = { loseCommitAnswers: 0 };
  // The COMMIT is carried out by the server; its answer is reported lost, as when the connection drops right then.
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => Promise<pg.PoolClient>;
  // pool.query connects with a callback (left as it is); runBatch awaits pool.connect().
  (pool as unknown as { connect: (...args: unknown[]) => unknown }).connect = (...args: unknown[]) => {
    if (args.length > 0) return connect(...args);
    return connect().then((client) => wrap(client));
  };
  const wrapped = new WeakSet<pg.PoolClient>();
  const wrap = (client: pg.PoolClient): pg.PoolClient => {
    if (wrapped.has(client)) return client;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
      const sent = query(...args);
      if (args[0] === "COMMIT" && state.loseCommitAnswers > 0) {
        state.loseCommitAnswers--;
        return sent.then(() => {
          throw new Error("Connection terminated unexpectedly");
        });
      }
      return sent;
    };
    return client;
  };
  store = createPgStore(pool, { groupCommitMs: 2 });
  await seedSession(store, { id: "s-a" });
  await seedSession(store, { id: "s-b" });
  await store.runs.create(runRecord({ id: "run-a", sessionId: "s-a" }), []);
  await store.runs.create(runRecord({ id: "run-b", sessionId: "s-b" }), []);

  // Reference: a lone write whose COMMIT answer is lost is outcomeUnknown.
  state.loseCommitAnswers = 1;
  const lone = await settle(store.commitRun("run-a", [], [delta("run-a", 1)]));
  expect(lone).toBeInstanceOf(StorageError);
  expect((lone as StorageError).outcomeUnknown).toBe(true);

  // Two runs' batches made in one turn share one group (one transaction).
  state.loseCommitAnswers = 1;
  const outcomes = await Promise.all([
    settle(store.commitRun("run-a", [], [delta("run-a", 2)])),
    settle(store.commitRun("run-b", [], [delta("run-b", 1)])),
  ]);
  // Both batches are stored, once each.
  expect(await store.events.lastSeq("run-a")).toBe(2);
  expect(await store.events.lastSeq("run-b")).toBe(1);
  // Each writer hears that the outcome is unknown, not a definite failure.
  expect(outcomes.map((o) => (o instanceof StorageError ? `outcomeUnknown=${o.outcomeUnknown}` : String(o)))).toEqual([
    "outcomeUnknown=true",
    "outcomeUnknown=true",
  ]);
}, 60_000);
