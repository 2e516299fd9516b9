import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isConflict } from "../../src/store/errors.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import type { SessionRecord, Store } from "../../src/store/store.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

const at = () => new Date().toISOString();
const session = (id: string, owner: string): SessionRecord => ({
  id,
  owner,
  system: null,
  model: null,
  tools: null,
  approval: null,
  workspace: id,
  workspaceShared: false,
  providerProfile: null,
  planning: false,
  metadata: null,
  webhook: null,
  createdAt: at(),
});

/** Settles every promise; how many were refused with `rule`, and whether anything else failed. */
async function outcomes(writes: Promise<unknown>[], rule: "owner_sessions" | "owner_runs") {
  const settled = await Promise.allSettled(writes);
  const refused = settled.filter((s) => s.status === "rejected" && isConflict(s.reason, rule)).length;
  const other = settled.filter((s) => s.status === "rejected" && !isConflict(s.reason, rule));
  return { created: settled.filter((s) => s.status === "fulfilled").length, refused, other };
}

/** Creates sessions and runs of `owner` at once through `stores` in turn (one store per instance). */
function owned(stores: Store[], prefix: string) {
  return {
    sessions: (n: number, max: number) =>
      Array.from({ length: n }, (_, i) =>
        (stores[i % stores.length] as Store).sessions.insert(session(`ses_${prefix}${i}`, prefix), {
          owner: prefix,
          max,
        }),
      ),
    runs: (sessionIds: string[], max: number) =>
      sessionIds.map((sessionId, i) =>
        (stores[i % stores.length] as Store).runs.create(
          runRecord({ id: `run_${prefix}${i}`, sessionId }),
          [{ type: "run.started", runId: `run_${prefix}${i}`, seq: 1, at: at() }],
          { limit: { owner: prefix, max } },
        ),
      ),
  };
}

describe.each(STORE_BACKENDS)("per-owner limits enforced by the store on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  it("ten sessions of one owner inserted at once under a limit of 3: three are created, seven refused", async () => {
    const result = await outcomes(owned([store], "a").sessions(10, 3), "owner_sessions");
    expect(result).toEqual({ created: 3, refused: 7, other: [] });
    expect(await store.sessions.countOf("a")).toBe(3);
    // Another owner is not counted; an insert without a limit is not limited.
    await store.sessions.insert(session("ses_other", "b"), { owner: "b", max: 1 });
    await store.sessions.insert(session("ses_free", "a"));
  });

  it("runs of one owner created at once under a limit of 2: two are created; a finished run frees its place", async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `ses_r${i}`);
    for (const id of ids) await seedSession(store, { id, owner: "r" });
    const result = await outcomes(owned([store], "r").runs(ids, 2), "owner_runs");
    expect(result).toEqual({ created: 2, refused: 4, other: [] });
    const active = await Promise.all(ids.map((id) => store.runs.active(id)));
    const first = active.find((run) => run !== null);
    await store.commitRun(first?.id as string, [finishChange()], []);
    const free = ids.find((_, i) => active[i] === null) as string;
    const full = await store.runs
      .create(runRecord({ id: "run_full", sessionId: free }), [], { limit: { owner: "r", max: 1 } })
      .catch((err) => err);
    expect(isConflict(full, "owner_runs")).toBe(true);
    await store.runs.create(runRecord({ id: "run_again", sessionId: free }), [], { limit: { owner: "r", max: 2 } });
    expect((await store.runs.active(free))?.id).toBe("run_again");
  });
});

describe("per-owner limits across two PostgreSQL stores over one database (two instances)", () => {
  let database: TestPgDatabase;
  let stores: Store[];
  beforeAll(async () => {
    database = await createTestPgDatabase();
    stores = [
      await openPgStore({ url: database.url, maxConnections: 8 }),
      await openPgStore({ url: database.url, maxConnections: 8 }),
    ];
  });
  afterAll(async () => {
    for (const store of stores ?? []) await store.close();
    await database?.drop();
  });

  it("sessions and runs of one owner created at once through both: the limit holds over the two", async () => {
    const sessions = await outcomes(owned(stores, "k").sessions(16, 5), "owner_sessions");
    expect(sessions).toEqual({ created: 5, refused: 11, other: [] });
    const ids = (await (stores[0] as Store).sessions.list({ owner: "k", limit: 10, cursor: null })).items.map(
      (s) => s.id,
    );
    const runs = await outcomes(owned(stores, "k").runs(ids, 3), "owner_runs");
    expect(runs).toEqual({ created: 3, refused: 2, other: [] });
  });
});
