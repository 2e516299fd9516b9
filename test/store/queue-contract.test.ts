import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import { isConflict } from "../../src/store/errors.js";
import type { RunChange, Store } from "../../src/store/store.js";
import { allDeliveries } from "../helpers/run-lists.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** The Store's contract for a session's queue of runs and for steered input, on every backend. */
/** The instance that starts queued runs in these tests, holding their leases. */
const starter = { owner: "inst_q", ttlMs: 60_000 };

describe.each(STORE_BACKENDS)("store queue and input contract on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}_${String(++counter).padStart(4, "0")}`;
  /** Times one millisecond apart, so "oldest first" is decided by creation time. */
  let clock = Date.parse("2030-01-01T00:00:00Z");
  const at = () => new Date(++clock).toISOString();

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  async function session(): Promise<string> {
    const id = fresh("ses");
    await seedSession(store, { id });
    return id;
  }
  async function run(sessionId: string, status: "running" | "queued") {
    const id = fresh("run");
    const createdAt = at();
    await store.runs.create(runRecord({ id, sessionId, status, createdAt }), [
      { type: status === "queued" ? "run.queued" : "run.started", runId: id, seq: 1, at: createdAt },
    ]);
    return id;
  }
  const finishChange = (from?: "queued"): RunChange => ({
    kind: "finish",
    stopReason: "aborted",
    stopDetail: "cancelled",
    error: null,
    stats: emptyStats(),
    finishedAt: at(),
    ...(from ? { from } : {}),
  });

  it("queued runs are not active: a busy session takes them, they list oldest first and none is 'unfinished'", async () => {
    const sessionId = await session();
    const active = await run(sessionId, "running");
    const second = await run(sessionId, "queued");
    const third = await run(sessionId, "queued");
    await expect(run(sessionId, "running")).rejects.toSatisfy((err) => isConflict(err, "active_run"));
    expect((await store.runs.active(sessionId))?.id).toBe(active);
    expect(await store.runs.queuedIds(sessionId)).toEqual([second, third]);
    expect(await Promise.all([second, third].map(async (id) => (await store.runs.get(id))?.status))).toEqual([
      "queued",
      "queued",
    ]);
    expect(await store.runs.anyQueued(sessionId)).toBe(true);
    expect(await store.runs.queuedSessions()).toContain(sessionId);
    const unfinished = (await store.runs.unfinished()).map((r) => r.id);
    expect(unfinished).toContain(active);
    expect(unfinished).not.toContain(second);
    expect((await store.events.after(second, 0)).map((e) => e.type)).toEqual(["run.queued"]);
  });

  it("startQueued waits for the active run's end, then starts the oldest with its run.started; once at a time", async () => {
    const sessionId = await session();
    const active = await run(sessionId, "running");
    const first = await run(sessionId, "queued");
    const second = await run(sessionId, "queued");
    expect(await store.runs.startQueued(sessionId, at(), starter)).toBeNull();
    await store.commitRun(active, [finishChange()], []);
    // Five at once: one starts the oldest, the others find the session busy.
    const starts = await Promise.all(Array.from({ length: 5 }, () => store.runs.startQueued(sessionId, at(), starter)));
    const started = starts.filter((s) => s !== null);
    expect(started).toHaveLength(1);
    expect(started[0]?.run).toMatchObject({ id: first, status: "running" });
    expect(started[0]?.events.map((e) => [e.seq, e.type])).toEqual([[2, "run.started"]]);
    // The starter holds the started run: its fenced writes go through, its renewals cover it.
    expect(started[0]?.lease).toEqual({ runId: first, owner: "inst_q", epoch: 1 });
    expect(await store.leases.renew({ ...starter, runIds: [first] })).toEqual([started[0]?.lease]);
    expect(JSON.parse(started[0]?.events[0]?.data ?? "{}")).toMatchObject({
      type: "run.started",
      runId: first,
      seq: 2,
    });
    expect((await store.events.after(first, 0)).map((e) => e.type)).toEqual(["run.queued", "run.started"]);
    expect((await store.runs.active(sessionId))?.id).toBe(first);
    expect(await store.runs.queuedIds(sessionId)).toEqual([second]);
    await store.commitRun(first, [finishChange()], []);
    expect((await store.runs.startQueued(sessionId, at(), starter))?.run.id).toBe(second);
    await store.commitRun(second, [finishChange()], []);
    expect(await store.runs.startQueued(sessionId, at(), starter)).toBeNull();
    expect(await store.runs.queuedSessions()).not.toContain(sessionId);
    expect(await store.runs.anyQueued(sessionId)).toBe(false);
    expect(await store.runs.queuedIds(sessionId)).toEqual([]);
  });

  it("startQueued under maxPerOwner: refused (owner_runs) while the owner has that many active runs; queued ones not counted", async () => {
    const owner = fresh("owner");
    const ownedSession = async () => {
      const id = fresh("ses");
      await seedSession(store, { id, owner });
      return id;
    };
    const [busy, waiting, other] = [await ownedSession(), await ownedSession(), await ownedSession()];
    const active = await run(busy, "running");
    const first = await run(waiting, "queued");
    const second = await run(other, "queued");
    const limit = { maxPerOwner: 1 };
    await expect(store.runs.startQueued(waiting, at(), starter, limit)).rejects.toSatisfy((err) =>
      isConflict(err, "owner_runs"),
    );
    expect((await store.runs.get(first))?.status).toBe("queued");
    expect((await store.events.after(first, 0)).map((e) => e.type)).toEqual(["run.queued"]);
    // Queued runs of the owner (`second`, and `first` itself) do not count: under 2 it starts.
    expect((await store.runs.startQueued(waiting, at(), starter, { maxPerOwner: 2 }))?.run.id).toBe(first);
    await store.commitRun(first, [finishChange()], []);
    await store.commitRun(active, [finishChange()], []);
    // The owner has no active run now: two starts at once, one starts, the other is refused.
    const third = await run(waiting, "queued");
    const starts = await Promise.allSettled([
      store.runs.startQueued(waiting, at(), starter, limit),
      store.runs.startQueued(other, at(), starter, limit),
    ]);
    const started = starts.flatMap((s) => (s.status === "fulfilled" && s.value ? [s.value.run.id] : []));
    const refused = starts.filter((s) => s.status === "rejected" && isConflict(s.reason, "owner_runs"));
    expect({ started: started.length, refused: refused.length }).toEqual({ started: 1, refused: 1 });
    expect([third, second]).toContain(started[0]);
    // A session without an owner is not limited.
    const unowned = await session();
    const unownedQueued = await run(unowned, "queued");
    expect((await store.runs.startQueued(unowned, at(), starter, limit))?.run.id).toBe(unownedQueued);
  });

  it("a held queue starts nothing until it is released, or until its hold runs out", async () => {
    const sessionId = await session();
    const queued = await run(sessionId, "queued");
    await store.runs.holdQueue(sessionId, 60_000);
    expect(await store.runs.startQueued(sessionId, at(), starter)).toBeNull();
    await store.runs.releaseQueue(sessionId);
    expect((await store.runs.startQueued(sessionId, at(), starter))?.run.id).toBe(queued);
    await store.commitRun(queued, [finishChange()], []);
    const next = await run(sessionId, "queued");
    // Long enough that the start asked for at once comes within it however loaded the machine
    // (a hold of 50 ms could run out before it on a slow one).
    const HOLD_MS = 1_000;
    const heldAt = Date.now();
    await store.runs.holdQueue(sessionId, HOLD_MS);
    expect(await store.runs.startQueued(sessionId, at(), starter)).toBeNull();
    // Then asked again until it starts: not before the hold ran out (the store's clock is this
    // machine's), and it does start once it has.
    let started: Awaited<ReturnType<Store["runs"]["startQueued"]>> = null;
    const deadline = heldAt + HOLD_MS + 10_000;
    while (!started && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      started = await store.runs.startQueued(sessionId, at(), starter);
    }
    expect(started?.run.id).toBe(next);
    expect(Date.now() - heldAt).toBeGreaterThanOrEqual(HOLD_MS - 5);
  });

  it("a hold taken twice is freed by its second release, in either order, not by the first", async () => {
    const sessionId = await session();
    const queued = await run(sessionId, "queued");
    await store.runs.holdQueue(sessionId, 60_000);
    await store.runs.holdQueue(sessionId, 30_000);
    await store.runs.releaseQueue(sessionId);
    expect(await store.runs.startQueued(sessionId, at(), starter)).toBeNull();
    await store.runs.releaseQueue(sessionId);
    expect((await store.runs.startQueued(sessionId, at(), starter))?.run.id).toBe(queued);
  });

  it("a hold keeps the latest end its holders asked for, and one run out counts its holders afresh", async () => {
    const sessionId = await session();
    const queued = await run(sessionId, "queued");
    await store.runs.holdQueue(sessionId, 60_000);
    // A shorter hold taken since does not shorten it.
    await store.runs.holdQueue(sessionId, 30);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await store.runs.startQueued(sessionId, at(), starter)).toBeNull();
    await store.runs.releaseQueue(sessionId);
    await store.runs.releaseQueue(sessionId);
    // Holders that never released (their process died): the hold runs out, and the next
    // holder's one release frees it.
    await store.runs.holdQueue(sessionId, 30);
    await store.runs.holdQueue(sessionId, 30);
    await new Promise((resolve) => setTimeout(resolve, 60));
    await store.runs.holdQueue(sessionId, 60_000);
    expect(await store.runs.startQueued(sessionId, at(), starter)).toBeNull();
    await store.runs.releaseQueue(sessionId);
    expect((await store.runs.startQueued(sessionId, at(), starter))?.run.id).toBe(queued);
  });

  it("a finish `from: queued` ends a queued run, and is refused (run_not_live) once the run has started", async () => {
    const sessionId = await session();
    const cancelled = await run(sessionId, "queued");
    const started = await run(sessionId, "queued");
    await store.commitRun(cancelled, [finishChange("queued")], []);
    expect((await store.runs.get(cancelled))?.status).toBe("finished");
    expect((await store.runs.startQueued(sessionId, at(), starter))?.run.id).toBe(started);
    await expect(store.commitRun(started, [finishChange("queued")], [])).rejects.toSatisfy((err) =>
      isConflict(err, "run_not_live"),
    );
    expect((await store.runs.get(started))?.status).toBe("running");
  });

  it("steered input: taken by a live run only, once, in the batch of its message; a new run made of it once; orphans listed", async () => {
    const sessionId = await session();
    const live = await run(sessionId, "running");
    const queued = await run(sessionId, "queued");
    const input = (id: string, runId: string) => ({ id, runId, content: `steer ${id}`, createdAt: at() });
    expect(await store.inputs.add(input("msg_a", live))).toBe(true);
    expect(await store.inputs.add(input("msg_b", live))).toBe(true);
    expect(await store.inputs.add(input("msg_q", queued))).toBe(false);
    expect((await store.inputs.pending(live)).map((i) => i.id)).toEqual(["msg_a", "msg_b"]);
    const message = {
      id: "msg_a",
      role: "user",
      content: "steer msg_a",
      sessionId,
      runId: live,
      seq: 1,
      createdAt: at(),
    } as StoredMessage;
    await store.commitRun(
      live,
      [
        { kind: "message", message },
        { kind: "input.taken", inputId: "msg_a" },
      ],
      [],
    );
    // Taken again (another writer of the run): refused, and nothing of the batch is written.
    const again = { ...message, id: "msg_a2", seq: 2 };
    await expect(
      store.commitRun(
        live,
        [
          { kind: "message", message: again },
          { kind: "input.taken", inputId: "msg_a" },
        ],
        [],
      ),
    ).rejects.toSatisfy((err) => isConflict(err, "input_taken"));
    expect((await store.messages.history(sessionId)).map((m) => m.id)).toEqual(["msg_a"]);
    expect((await store.inputs.pending(live)).map((i) => i.id)).toEqual(["msg_b"]);
    expect(await store.inputs.orphaned()).not.toContainEqual(expect.objectContaining({ id: "msg_b" }));
    expect(await store.inputs.left("msg_b")).toBeNull();
    expect(await store.inputs.leftOn(live)).toEqual([]);
    await store.commitRun(live, [finishChange()], []);
    expect(await store.inputs.leftOn(live)).toEqual(["msg_b"]);
    expect(await store.inputs.add(input("msg_late", live))).toBe(false);
    expect((await store.inputs.orphaned()).map((i) => i.id)).toContain("msg_b");
    expect(await store.inputs.left("msg_b")).toEqual((await store.inputs.orphaned()).find((i) => i.id === "msg_b"));
    expect(await store.inputs.left("msg_absent")).toBeNull();
    // Two new runs made of the left input at once: one is created (and takes it), the other refused.
    const made = await Promise.allSettled(
      [fresh("run"), fresh("run")].map((id) => {
        const createdAt = at();
        return store.runs.create(
          runRecord({ id, sessionId, status: "queued", input: "steer msg_b", createdAt }),
          [{ type: "run.queued", runId: id, seq: 1, at: createdAt }],
          { takesInput: "msg_b" },
        );
      }),
    );
    expect(made.map((m) => m.status).sort()).toEqual(["fulfilled", "rejected"]);
    const refused = made.find((m) => m.status === "rejected");
    expect(isConflict((refused as PromiseRejectedResult).reason, "input_taken")).toBe(true);
    expect(await store.inputs.pending(live)).toEqual([]);
    const queuedRuns = await Promise.all((await store.runs.queuedIds(sessionId)).map((id) => store.runs.get(id)));
    expect(queuedRuns.map((r) => r?.input)).toEqual(["hi", "steer msg_b"]);
  });

  it("withdraw removes a steered input no run took: its run's take of it is refused (input_taken) after; a taken one is not there to withdraw", async () => {
    const sessionId = await session();
    const live = await run(sessionId, "running");
    const input = (id: string) => ({ id, runId: live, content: `steer ${id}`, createdAt: at() });
    expect(await store.inputs.add(input("msg_wd"))).toBe(true);
    expect(await store.inputs.withdraw("msg_wd")).toBe(true);
    expect(await store.inputs.withdraw("msg_wd")).toBe(false);
    expect(await store.inputs.pending(live)).toEqual([]);
    expect(await store.inputs.pendingStatus(live, "msg_wd")).toBeNull();
    const message = { id: "msg_wd", role: "user", content: "steer msg_wd", sessionId, runId: live, seq: 1 };
    const take = [
      { kind: "message" as const, message: { ...message, createdAt: at() } as StoredMessage },
      { kind: "input.taken" as const, inputId: "msg_wd" },
    ];
    await expect(store.commitRun(live, take, [])).rejects.toSatisfy((err) => isConflict(err, "input_taken"));
    expect(await store.messages.history(sessionId)).toEqual([]);
  });

  it("a steered input's trace is found in its session only: stored (pending or left), taken as a user message, or made a run of", async () => {
    const sessionId = await session();
    const elsewhere = await session();
    const live = await run(sessionId, "running");
    const none = { key: "\nleft none", id: "run_none" };
    const input = (id: string) => ({ id, runId: live, content: `steer ${id}`, createdAt: at() });
    expect(await store.inputs.steered(sessionId, "msg_tr_p", none)).toBe(false);
    expect(await store.inputs.add(input("msg_tr_p"))).toBe(true);
    expect(await store.inputs.add(input("msg_tr_t"))).toBe(true);
    const message = {
      id: "msg_tr_t",
      role: "user",
      content: "steer msg_tr_t",
      sessionId,
      runId: live,
      seq: 1,
      createdAt: at(),
    };
    await store.commitRun(
      live,
      [
        { kind: "message", message: message as StoredMessage },
        { kind: "input.taken", inputId: "msg_tr_t" },
      ],
      [],
    );
    for (const id of ["msg_tr_p", "msg_tr_t"]) {
      expect(await store.inputs.steered(sessionId, id, none), id).toBe(true);
      expect(await store.inputs.steered(elsewhere, id, none), id).toBe(false);
    }
    // Left on the run once it ended.
    await store.commitRun(live, [finishChange()], []);
    expect(await store.inputs.steered(sessionId, "msg_tr_p", none)).toBe(true);
    // Made a run of: that run found by its key, or by its id, in the session.
    const made = fresh("run");
    const createdAt = at();
    await store.runs.create(
      runRecord({ id: made, sessionId, status: "queued", input: "x", createdAt, idempotencyKey: "\nleft msg_tr_m" }),
      [{ type: "run.queued", runId: made, seq: 1, at: createdAt }],
    );
    expect(await store.inputs.steered(sessionId, "msg_tr_m", { key: "\nleft msg_tr_m", id: "run_none" })).toBe(true);
    expect(await store.inputs.steered(elsewhere, "msg_tr_m", { key: "\nleft msg_tr_m", id: "run_none" })).toBe(false);
    expect(await store.inputs.steered(sessionId, "msg_tr_m", { key: "\nleft none", id: made })).toBe(true);
    expect(await store.inputs.steered(elsewhere, "msg_tr_m", { key: "\nleft none", id: made })).toBe(false);
  });

  it("steered input under a maximum: concurrent adds past it refused (inputs_full), a stored id added again is not; its run's status read while pending", async () => {
    const sessionId = await session();
    const live = await run(sessionId, "running");
    const input = (id: string) => ({ id, runId: live, content: `steer ${id}`, createdAt: at() });
    const adds = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => store.inputs.add(input(`msg_max${i}`), { max: 3 })),
    );
    expect(adds.filter((a) => a.status === "fulfilled").map((a) => a.value)).toEqual([true, true, true]);
    for (const refused of adds.filter((a) => a.status === "rejected")) {
      expect(isConflict(refused.reason, "inputs_full")).toBe(true);
    }
    const stored = (await store.inputs.pending(live)).map((i) => i.id);
    expect(stored).toHaveLength(3);
    // A retry of a stored input (a keyed steer) is answered as before: not stored again, not refused.
    expect(await store.inputs.add(input(stored[0] as string), { max: 3 })).toBe(false);
    expect(await store.inputs.pendingStatus(live, stored[0] as string)).toBe("running");
    expect(await store.inputs.pendingStatus(live, "msg_none")).toBeNull();
    // A retry compares its input with the stored one, exactly (U+0000 too, which PostgreSQL keeps encoded).
    const first = stored[0] as string;
    expect(await store.inputs.pendingHolds(live, first, `steer ${first}`)).toBe(true);
    expect(await store.inputs.pendingHolds(live, first, `steer ${first} `)).toBe(false);
    expect(await store.inputs.pendingHolds(live, first, `STEER ${first}`)).toBe(false);
    expect(await store.inputs.pendingHolds(live, "msg_none", `steer ${first}`)).toBeNull();
    expect(await store.inputs.pendingHolds(fresh("run"), first, `steer ${first}`)).toBeNull();
    const nul = { id: fresh("msg"), runId: live, content: "a\u0000b", createdAt: at() };
    expect(await store.inputs.add(nul)).toBe(true);
    expect(await store.inputs.pendingHolds(live, nul.id, "a\u0000b")).toBe(true);
    expect(await store.inputs.pendingHolds(live, nul.id, "a\u0000c")).toBe(false);
    // Left on a run that is not finished: not left yet.
    expect(await store.inputs.leftHolds(first, `steer ${first}`)).toBeNull();
    await store.commitRun(live, [finishChange()], []);
    expect(await store.inputs.pendingStatus(live, stored[0] as string)).toBe("finished");
    // Left on the finished run: a keyed steer sent again compares its input with it, exactly.
    // It names the run it is left on (a refused retry's answer names it).
    expect(await store.inputs.leftHolds(first, `steer ${first}`)).toEqual({ runId: live, same: true });
    expect(await store.inputs.leftHolds(first, `steer ${first} `)).toEqual({ runId: live, same: false });
    expect(await store.inputs.leftHolds(nul.id, "a\u0000b")).toEqual({ runId: live, same: true });
    expect(await store.inputs.leftHolds("msg_none", `steer ${first}`)).toBeNull();
  });

  it("a queued run's run.queued and its later run.started go to a target that asked for them", async () => {
    const sessionId = await session();
    const id = fresh("run");
    const webhook = { url: "https://hooks.example.com/x", events: ["run.queued" as const, "run.started" as const] };
    await run(sessionId, "running");
    const createdAt = at();
    await store.runs.create(runRecord({ id, sessionId, status: "queued", createdAt, webhook }), [
      { type: "run.queued", runId: id, seq: 1, at: createdAt },
    ]);
    expect((await allDeliveries(store, id)).map((d) => d.type)).toEqual(["run.queued"]);
    const active = await store.runs.active(sessionId);
    await store.commitRun(active?.id ?? "", [finishChange()], []);
    expect((await store.runs.startQueued(sessionId, at(), starter))?.run.id).toBe(id);
    expect((await allDeliveries(store, id)).map((d) => d.type)).toEqual(["run.queued", "run.started"]);
  });
});
