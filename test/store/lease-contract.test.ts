import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import { isConflict } from "../../src/store/errors.js";
import type { RunLease, Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Leases and fencing, the same on every backend: a fresh database per test (claims take any run). */
describe.each(STORE_BACKENDS)("run leases on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}_${String(++counter).padStart(4, "0")}`;
  const at = () => new Date().toISOString();

  beforeEach(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterEach(() => opened?.dispose());

  /** A live run whose first lease `owner` takes for `ttlMs`. */
  async function leasedRun(owner: string, ttlMs: number): Promise<{ sessionId: string; runId: string }> {
    const sessionId = fresh("ses");
    const runId = fresh("run");
    await seedSession(store, { id: sessionId });
    await store.runs.create(runRecord({ id: runId, sessionId }), [{ type: "run.started", runId, seq: 1, at: at() }], {
      lease: { owner, ttlMs },
    });
    return { sessionId, runId };
  }

  const userMessage = (sessionId: string, runId: string, seq: number): StoredMessage => ({
    id: fresh("msg"),
    role: "user",
    content: `m${seq}`,
    sessionId,
    runId,
    seq,
    createdAt: at(),
  });
  const delta = (runId: string, seq: number): RunEvent => ({ type: "text.delta", text: "x", runId, seq, at: at() });

  it("the creator holds a new run at epoch 1: its fenced writes go through and no peer can claim it while it holds", async () => {
    const { sessionId, runId } = await leasedRun("inst_a", 60_000);
    const lease: RunLease = { runId, owner: "inst_a", epoch: 1 };
    await store.commitRun(runId, [{ kind: "message", message: userMessage(sessionId, runId, 1) }], [], lease);
    expect(await store.leases.claim({ owner: "inst_b", ttlMs: 60_000, limit: 10, scope: "expired" })).toEqual([]);
    expect(await store.leases.renew({ owner: "inst_a", ttlMs: 60_000, runIds: [runId] })).toEqual([lease]);
    // A peer that names the run holds nothing of it.
    expect(await store.leases.renew({ owner: "inst_b", ttlMs: 60_000, runIds: [runId] })).toEqual([]);
  });

  it("once its lease expired a peer claims the run at epoch 2; the old holder's writes are refused and write nothing", async () => {
    const { sessionId, runId } = await leasedRun("inst_a", 150);
    await sleep(250);
    const claimed = await store.leases.claim({ owner: "inst_b", ttlMs: 60_000, limit: 10, scope: "expired" });
    expect(claimed.map((c) => [c.record.id, c.lease])).toEqual([[runId, { runId, owner: "inst_b", epoch: 2 }]]);
    const stale = store.commitRun(
      runId,
      [{ kind: "message", message: userMessage(sessionId, runId, 1) }],
      [delta(runId, 2)],
      { runId, owner: "inst_a", epoch: 1 },
    );
    await expect(stale).rejects.toSatisfy((err) => isConflict(err, "fenced"));
    expect(await store.messages.history(sessionId)).toEqual([]);
    expect(await store.events.lastSeq(runId)).toBe(1);
    // The old holder's renewal no longer covers the run: it learns it lost it.
    expect(await store.leases.renew({ owner: "inst_a", ttlMs: 60_000, runIds: [runId] })).toEqual([]);
    await store.commitRun(
      runId,
      [{ kind: "message", message: userMessage(sessionId, runId, 1) }],
      [delta(runId, 2)],
      claimed[0]?.lease,
    );
    expect((await store.messages.history(sessionId)).map((m) => m.seq)).toEqual([1]);
  });

  it("a lease that held is refused once a peer claimed the run, for the very object its writes went through with", async () => {
    const { sessionId, runId } = await leasedRun("inst_a", 150);
    // One object for every write, as a run's recorder does: the store has seen it hold.
    const lease: RunLease = { runId, owner: "inst_a", epoch: 1 };
    await store.commitRun(runId, [{ kind: "message", message: userMessage(sessionId, runId, 1) }], [], lease);
    await sleep(250);
    expect(await store.leases.claim({ owner: "inst_b", ttlMs: 60_000, limit: 10, scope: "expired" })).toHaveLength(1);
    const stale = store.commitRun(runId, [{ kind: "message", message: userMessage(sessionId, runId, 2) }], [], lease);
    await expect(stale).rejects.toSatisfy((err) => isConflict(err, "fenced"));
    expect((await store.messages.history(sessionId)).map((m) => m.seq)).toEqual([1]);
  });

  it("a renewal keeps only the named runs alive: a held run the owner no longer names expires and is claimed", async () => {
    const kept = await leasedRun("inst_a", 300);
    const dropped = await leasedRun("inst_a", 300);
    for (let i = 0; i < 3; i++) {
      await sleep(150);
      await store.leases.renew({ owner: "inst_a", ttlMs: 300, runIds: [kept.runId] });
    }
    const claimed = await store.leases.claim({ owner: "inst_b", ttlMs: 60_000, limit: 10, scope: "expired" });
    expect(claimed.map((c) => c.record.id)).toEqual([dropped.runId]);
  });

  it("a run that finished is still its holder's: a renewal naming it (sent before the end committed) returns its lease", async () => {
    const { sessionId, runId } = await leasedRun("inst_a", 60_000);
    const lease: RunLease = { runId, owner: "inst_a", epoch: 1 };
    await store.commitRun(
      runId,
      [
        {
          kind: "finish",
          stopReason: "complete",
          stopDetail: null,
          error: null,
          stats: runRecord({ id: runId, sessionId }).stats,
          finishedAt: at(),
        },
      ],
      [],
      lease,
    );
    // Not lost: nobody took it over, so its instance must not stop it as taken.
    expect(await store.leases.renew({ owner: "inst_a", ttlMs: 60_000, runIds: [runId] })).toEqual([lease]);
    expect(await store.leases.renew({ owner: "inst_b", ttlMs: 60_000, runIds: [runId] })).toEqual([]);
  });

  it("a release gives up every lease of its owner: a peer claims them at once, without waiting for the TTL", async () => {
    const one = await leasedRun("inst_a", 3_600_000);
    const two = await leasedRun("inst_a", 3_600_000);
    const other = await leasedRun("inst_c", 3_600_000);
    expect(await store.leases.release("inst_a")).toBe(2);
    const claimed = await store.leases.claim({ owner: "inst_b", ttlMs: 60_000, limit: 10, scope: "expired" });
    expect(claimed.map((c) => c.record.id).sort()).toEqual([one.runId, two.runId].sort());
    expect(claimed.every((c) => c.lease.epoch === 2)).toBe(true);
    expect(claimed.map((c) => c.record.id)).not.toContain(other.runId);
  });

  it("finished runs are never claimed, and scope `expired+own` takes the owner's own live runs but not a peer's", async () => {
    const mine = await leasedRun("inst_a", 3_600_000);
    const peers = await leasedRun("inst_c", 3_600_000);
    const done = await leasedRun("inst_a", 100);
    await store.commitRun(
      done.runId,
      [
        {
          kind: "finish",
          stopReason: "complete",
          stopDetail: null,
          error: null,
          stats: runRecord({ id: done.runId, sessionId: done.sessionId }).stats,
          finishedAt: at(),
        },
      ],
      [],
    );
    await sleep(150);
    const own = await store.leases.claim({ owner: "inst_a", ttlMs: 60_000, limit: 10, scope: "expired+own" });
    expect(own.map((c) => c.record.id)).toEqual([mine.runId]);
    const all = await store.leases.claim({ owner: "inst_b", ttlMs: 60_000, limit: 10, scope: "all" });
    expect(all.map((c) => c.record.id).sort()).toEqual([mine.runId, peers.runId].sort());
  });

  it("a claim takes none of the runs it is told to leave alone (those its instance executes)", async () => {
    const executed = await leasedRun("inst_a", 3_600_000);
    const left = await leasedRun("inst_a", 3_600_000);
    const own = await store.leases.claim({
      owner: "inst_a",
      ttlMs: 60_000,
      limit: 10,
      scope: "expired+own",
      except: [executed.runId],
    });
    expect(own.map((c) => c.record.id)).toEqual([left.runId]);
    const all = await store.leases.claim({
      owner: "inst_a",
      ttlMs: 60_000,
      limit: 10,
      scope: "all",
      except: [executed.runId],
    });
    expect(all.map((c) => c.record.id)).toEqual([left.runId]);
  });

  it("with `cancelled`, a claim takes only the runs with a cancel requested (true) or only the others (false)", async () => {
    const cancelled = await leasedRun("inst_a", 3_600_000);
    const going = await leasedRun("inst_a", 3_600_000);
    await store.commitRequest(cancelled.runId, [{ kind: "cancelRequested", at: at() }]);
    const claim = (owner: string, flag: boolean) =>
      store.leases.claim({ owner, ttlMs: 60_000, limit: 10, scope: "all", cancelled: flag });
    expect((await claim("inst_b", true)).map((c) => c.record.id)).toEqual([cancelled.runId]);
    expect((await claim("inst_c", false)).map((c) => c.record.id)).toEqual([going.runId]);
  });

  it("instances reaping at once never claim the same run", async () => {
    const runs = await Promise.all(Array.from({ length: 20 }, () => leasedRun("inst_lost", 100)));
    await sleep(200);
    const claims = await Promise.all(
      ["inst_1", "inst_2", "inst_3"].map((owner) =>
        store.leases.claim({ owner, ttlMs: 60_000, limit: 20, scope: "expired" }),
      ),
    );
    const ids = claims.flat().map((c) => c.record.id);
    expect(new Set(ids).size).toBe(ids.length);
    // What one pass skipped (locked by another) the next pass takes: every run has one owner.
    const rest = await store.leases.claim({ owner: "inst_4", ttlMs: 60_000, limit: 20, scope: "expired" });
    expect([...ids, ...rest.map((c) => c.record.id)].sort()).toEqual(runs.map((r) => r.runId).sort());
  });

  it("a fenced write racing a claim either lands before it (and the claimer sees it) or is refused whole", async () => {
    for (let i = 0; i < 10; i++) {
      const { sessionId, runId } = await leasedRun("inst_a", 1);
      await sleep(5);
      const [write, claim] = await Promise.allSettled([
        store.commitRun(runId, [{ kind: "message", message: userMessage(sessionId, runId, 1) }], [delta(runId, 2)], {
          runId,
          owner: "inst_a",
          epoch: 1,
        }),
        store.leases.claim({ owner: "inst_b", ttlMs: 60_000, limit: 10, scope: "expired" }),
      ]);
      expect(claim.status).toBe("fulfilled");
      // A claim skips a row a write holds locked: the next pass takes it.
      if (claim.status === "fulfilled" && claim.value.length === 0) {
        await store.leases.claim({ owner: "inst_b", ttlMs: 60_000, limit: 10, scope: "expired" });
      }
      const history = await store.messages.history(sessionId);
      if (write.status === "fulfilled") expect(history).toHaveLength(1);
      else {
        expect(isConflict(write.reason, "fenced")).toBe(true);
        expect(history).toEqual([]);
        expect(await store.events.lastSeq(runId)).toBe(1);
      }
      // Either way the claim took the run, at the next epoch.
      expect(await store.leases.renew({ owner: "inst_b", ttlMs: 60_000, runIds: [runId] })).toEqual([
        { runId, owner: "inst_b", epoch: 2 },
      ]);
    }
  });
});
