import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import { isConflict } from "../../src/store/errors.js";
import { GroupCommit } from "../../src/store/group-commit.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { RunLease, Store } from "../../src/store/store.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";
import { tempDir } from "../helpers/temp-dir.js";

const at = () => new Date().toISOString();
const delta = (runId: string, seq: number, text = "x"): RunEvent => ({
  type: "text.delta",
  text,
  runId,
  seq,
  at: at(),
});

describe("GroupCommit over a real SQLite file", () => {
  let dir: ReturnType<typeof tempDir>;
  let db: Database.Database;
  let transactions: number;
  let group: GroupCommit<() => unknown>;
  const insert = (key: string) => () => db.prepare("INSERT INTO t (k) VALUES (?)").run(key).changes;
  const keys = () => (db.prepare("SELECT k FROM t ORDER BY rowid").all() as { k: string }[]).map((r) => r.k);

  beforeEach(() => {
    dir = tempDir();
    db = new Database(join(dir.path, "g.db"));
    db.pragma("journal_mode = WAL");
    db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
    transactions = 0;
    const inTransaction = db.transaction((fn: () => unknown) => fn());
    const counted = (fn: () => unknown) => {
      transactions++;
      return inTransaction(fn);
    };
    group = new GroupCommit<() => unknown>({
      windowMs: 5,
      commitGroup: (works) => {
        try {
          return Promise.resolve(counted(() => works.map((work) => work())) as unknown[]);
        } catch (err) {
          return Promise.reject(err);
        }
      },
      commitAlone: (work) => {
        try {
          return Promise.resolve(counted(work));
        } catch (err) {
          return Promise.reject(err);
        }
      },
    });
  });
  afterEach(() => {
    db.close();
    dir.cleanup();
  });

  it("writes queued in one turn share one transaction, in the order queued, and settle only once it committed", async () => {
    const settled: string[] = [];
    const writes = ["a", "b", "c"].map((k) => group.add(insert(k)).then(() => settled.push(k)));
    // Nothing is applied, and no promise settles, before the group's transaction.
    expect(keys()).toEqual([]);
    await Promise.resolve();
    expect(settled).toEqual([]);
    await Promise.all(writes);
    expect(keys()).toEqual(["a", "b", "c"]);
    expect(settled).toEqual(["a", "b", "c"]);
    expect(transactions).toBe(1);
  });

  it("writes queued within the window of the last group wait for the next one and then share it", async () => {
    // The window runs from the first group's start, which comes after this (its commit, a
    // file sync, may take longer than the window on a loaded machine).
    const started = performance.now();
    await Promise.all([group.add(insert("first")), group.add(insert("second"))]);
    await Promise.all([group.add(insert("a")), group.add(insert("b"))]);
    expect(transactions).toBe(2);
    // The second group went no sooner than the window (5 ms) after the first (timers may fire ~1 ms early).
    expect(performance.now() - started).toBeGreaterThanOrEqual(3);
    expect(keys()).toEqual(["first", "second", "a", "b"]);
  });

  it("a lone writer does not wait for the window: after a group of one write, the next goes at the end of its turn", async () => {
    const slow = new GroupCommit<() => unknown>({
      windowMs: 60_000,
      commitGroup: (works) => Promise.resolve(db.transaction(() => works.map((work) => work()))()),
      commitAlone: (work) => Promise.resolve(db.transaction(work)()),
    });
    const windowPassed = new Promise((resolve) => setTimeout(() => resolve("window"), 30_000).unref());
    for (const key of ["a", "b", "c"]) {
      expect(await Promise.race([slow.add(insert(key)).then(() => "committed"), windowPassed])).toBe("committed");
    }
    expect(keys()).toEqual(["a", "b", "c"]);
  });

  it("when one write of a group throws, nothing of the group is kept and each write runs again alone: the others are stored once, the failing one rejects", async () => {
    db.prepare("INSERT INTO t (k) VALUES ('taken')").run();
    const results = await Promise.allSettled([
      group.add(insert("a")),
      group.add(insert("taken")),
      group.add(insert("b")),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    expect(keys()).toEqual(["taken", "a", "b"]);
    // The failed group, then each of its three writes alone.
    expect(transactions).toBe(4);
  });

  it("flush commits the waiting group at once, so a write made after it sees the group's writes first", async () => {
    const grouped = group.add(insert("a"));
    group.flush();
    expect(keys()).toEqual(["a"]);
    await grouped;
  });

  it("held writes, queued before or during the hold, wait uncommitted until the release, then go in one group in order", async () => {
    const before = group.add(insert("a"));
    const release = group.hold();
    const during = [group.add(insert("b")), group.add(insert("c"))];
    // Past the window and several turns, and a flush: nothing is committed while held.
    await new Promise((resolve) => setTimeout(resolve, 30));
    group.flush();
    expect(keys()).toEqual([]);
    expect(transactions).toBe(0);
    release();
    release(); // a second call changes nothing
    await Promise.all([before, ...during]);
    expect(keys()).toEqual(["a", "b", "c"]);
    expect(transactions).toBe(1);
    // Released for good: the next write goes on its own.
    await group.add(insert("d"));
    expect(keys()).toEqual(["a", "b", "c", "d"]);
  });

  it("holds nest: the writes wait for the last release; a closing flush commits them even while held", async () => {
    const first = group.hold();
    const second = group.hold();
    const waiting = group.add(insert("a"));
    first();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(keys()).toEqual([]);
    group.flush(true);
    expect(keys()).toEqual(["a"]);
    await waiting;
    second();
  });
});

/** Two live runs, each leased by inst_a at epoch 1. */
async function twoLeasedRuns(store: Store): Promise<void> {
  for (const id of ["1", "2"]) {
    await seedSession(store, { id: `ses_${id}` });
    await store.runs.create(runRecord({ id: `run_${id}`, sessionId: `ses_${id}` }), [], {
      lease: { owner: "inst_a", ttlMs: 60_000 },
    });
  }
}
const lease = (runId: string, epoch = 1): RunLease => ({ runId, owner: "inst_a", epoch });

describe("the SQLite store's commits of live runs, grouped", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: Store;

  beforeEach(async () => {
    dir = tempDir();
    store = openSqliteStore({ path: join(dir.path, "a.db"), groupCommitMs: 50 });
    await twoLeasedRuns(store);
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  it("a read sees a commit once it settled, not while it waits for its group; a write made meanwhile goes after it", async () => {
    const commit = store.commitRun("run_1", [], [delta("run_1", 1, "hello")], lease("run_1"));
    expect(await store.events.after("run_1", 0)).toEqual([]);
    await commit;
    expect((await store.events.after("run_1", 0)).map((r) => JSON.parse(r.data).text)).toEqual(["hello"]);
    // A delete of the run's session made while the run's final commit waits: the commit is
    // stored first (a delete before it would be refused: the run was not finished).
    const waiting = store.commitRun("run_1", [finishChange()], [delta("run_1", 2)], lease("run_1"));
    expect(await store.sessions.delete("ses_1")).toBe(true);
    await expect(waiting).resolves.toHaveLength(1);
    expect(await store.events.after("run_1", 0)).toEqual([]);
  });
});

describe.each(STORE_BACKENDS)("grouped commits of live runs on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;

  beforeEach(async () => {
    opened = await backend.open();
    store = opened.store;
    await twoLeasedRuns(store);
  });
  afterEach(() => opened?.dispose());

  it("commits of several runs made together are all stored, each run's events gapless", async () => {
    await Promise.all(
      [1, 2, 3].flatMap((seq) => [
        store.commitRun("run_1", [], [delta("run_1", seq)], lease("run_1")),
        store.commitRun("run_2", [], [delta("run_2", seq)], lease("run_2")),
      ]),
    );
    for (const runId of ["run_1", "run_2"]) {
      expect((await store.events.after(runId, 0)).map((r) => r.seq)).toEqual([1, 2, 3]);
    }
  });

  it("a run whose lease was claimed is refused in a group while the other run's commit in it is stored", async () => {
    await store.commitRun("run_1", [], [delta("run_1", 1)], lease("run_1"));
    // A claim of every run (as a start-up recovery makes), at epoch 2.
    await store.leases.claim({ owner: "inst_a", ttlMs: 60_000, limit: 10, scope: "all" });
    const [stale, fresh] = await Promise.allSettled([
      store.commitRun("run_1", [], [delta("run_1", 2)], lease("run_1", 1)),
      store.commitRun("run_2", [], [delta("run_2", 1)], lease("run_2", 2)),
    ]);
    expect(stale.status === "rejected" && isConflict(stale.reason, "fenced")).toBe(true);
    expect(fresh.status).toBe("fulfilled");
    expect((await store.events.after("run_1", 0)).map((r) => r.seq)).toEqual([1]);
    expect((await store.events.after("run_2", 0)).map((r) => r.seq)).toEqual([1]);
  });

  it("a lease that held is refused once its run, finished, was deleted with its session", async () => {
    await store.commitRun("run_1", [finishChange()], [delta("run_1", 1)], lease("run_1"));
    expect(await store.sessions.delete("ses_1")).toBe(true);
    await expect(store.commitRun("run_1", [], [delta("run_1", 2)], lease("run_1"))).rejects.toSatisfy((err) =>
      isConflict(err, "fenced"),
    );
  });
});
