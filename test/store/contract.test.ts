import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { abortedOutcome, toolResultMessage } from "../../src/agent/tool-results.js";
import type { RunEvent } from "../../src/domain/run-events.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import { isConflict } from "../../src/store/errors.js";
import { MAX_KEY } from "../../src/store/page.js";
import { defaultRunLimits } from "../../src/store/runs.js";
import type { Store } from "../../src/store/store.js";
import { allDeliveries } from "../helpers/run-lists.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** The Store's contract, the same for every backend: what the database itself guarantees. */
describe.each(STORE_BACKENDS)("store contract on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;
  /** Ids unique within the file: the tests share one database per backend. */
  const fresh = (prefix: string) => `${prefix}_${String(++counter).padStart(4, "0")}`;

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  const at = () => new Date().toISOString();
  const event = (runId: string, seq: number, text = `t${seq}`): RunEvent => ({
    type: "text.delta",
    text,
    runId,
    seq,
    at: at(),
  });
  const message = (sessionId: string, runId: string, seq: number, extra: Partial<StoredMessage> = {}) =>
    ({
      id: fresh("msg"),
      role: "user",
      content: `m${seq}`,
      sessionId,
      runId,
      seq,
      createdAt: at(),
      ...extra,
    }) as StoredMessage;

  async function liveRun(): Promise<{ sessionId: string; runId: string }> {
    const sessionId = fresh("ses");
    const runId = fresh("run");
    await seedSession(store, { id: sessionId });
    await store.runs.create(runRecord({ id: runId, sessionId }), [{ type: "run.started", runId, seq: 1, at: at() }]);
    return { sessionId, runId };
  }

  const finish = (runId: string) => store.commitRun(runId, [finishChange()], []);

  it("a batch with a change the data refuses writes nothing of it, and the next batch takes the same seqs", async () => {
    const { sessionId, runId } = await liveRun();
    await finish(runId);
    const refused = store.commitRun(
      runId,
      [{ kind: "message", message: message(sessionId, runId, 1) }, finishChange()],
      [event(runId, 2)],
    );
    await expect(refused).rejects.toSatisfy((err) => isConflict(err, "run_not_live"));
    expect(await store.messages.history(sessionId)).toEqual([]);
    expect(await store.events.lastSeq(runId)).toBe(1);
    const stored = await store.commitRun(
      runId,
      [{ kind: "message", message: message(sessionId, runId, 1) }],
      [event(runId, 2)],
    );
    expect(stored.map((e) => e.seq)).toEqual([2]);
    expect((await store.messages.history(sessionId)).map((m) => m.seq)).toEqual([1]);
  });

  it("a duration change raises a live run's stored durationMs, its other stats kept, never lowers it, and is ignored once the run finished", async () => {
    const { runId } = await liveRun();
    const counts = { modelCalls: 2, toolCalls: 1, turns: 2, inputTokens: 30, outputTokens: 7 };
    await store.commitRun(runId, [{ kind: "stats", stats: { ...counts, durationMs: 100 } }], []);
    const durationTo = async (durationMs: number) => {
      await store.commitRun(runId, [{ kind: "duration", durationMs }], []);
      return (await store.runs.get(runId))?.stats;
    };
    expect(await durationTo(2500)).toEqual({ ...counts, durationMs: 2500 });
    expect(await durationTo(900)).toEqual({ ...counts, durationMs: 2500 });
    await finish(runId);
    const finished = (await store.runs.get(runId))?.stats;
    expect(await durationTo(99_000)).toEqual(finished);
  });

  it("ten runs started at once on one session: exactly one is created, the others are refused active_run", async () => {
    const sessionId = fresh("ses");
    await seedSession(store, { id: sessionId });
    const ids = Array.from({ length: 10 }, () => fresh("run"));
    const results = await Promise.allSettled(ids.map((id) => store.runs.create(runRecord({ id, sessionId }), [])));
    const created = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(created).toHaveLength(1);
    expect(refused).toHaveLength(9);
    for (const r of refused) expect(isConflict(r.reason, "active_run"), String(r.reason)).toBe(true);
    const active = await store.runs.active(sessionId);
    expect(ids[results.findIndex((r) => r.status === "fulfilled")]).toBe(active?.id);
    expect((await store.runs.list({ sessionId, limit: 20, cursor: null })).items).toHaveLength(1);
  });

  it("an idempotency key is taken once per session: a second run with it is refused, the first is found by it", async () => {
    const sessionId = fresh("ses");
    await seedSession(store, { id: sessionId });
    const first = fresh("run");
    const input = "i".repeat(100_000);
    const approval = { default: "ask" as const, tools: { shell: "deny" as const } };
    await store.runs.create(
      runRecord({
        id: first,
        sessionId,
        idempotencyKey: "key-1",
        input,
        maxTurns: 7,
        approval,
        maxTokens: 500,
        webhook: { url: "https://hooks.example.com/in", events: ["run.finished"], serverDefault: false },
      }),
      [],
    );
    await finish(first);
    const again = store.runs.create(runRecord({ id: fresh("run"), sessionId, idempotencyKey: "key-1" }), []);
    await expect(again).rejects.toSatisfy((err) => isConflict(err, "idempotency_key"));
    // Found by the key with its settings; its input compared with the given one, not read.
    expect(await store.runs.keyed(sessionId, "key-1", input)).toEqual({
      id: first,
      sameInput: true,
      maxTurns: 7,
      contextMaxChars: null,
      approval,
      ...defaultRunLimits(),
      maxTokens: 500,
      webhook: { url: "https://hooks.example.com/in", events: ["run.finished"], serverDefault: false },
    });
    expect(await store.runs.keyed(sessionId, "key-1", `${input}j`)).toMatchObject({ id: first, sameInput: false });
    expect(await store.runs.keyed(sessionId, "key-1", "")).toMatchObject({ id: first, sameInput: false });
    expect(await store.runs.keyed(sessionId, "key-2", input)).toBeNull();
    // Compared by the run's id too (a run made of a steer's left input holds no key), its input not read.
    expect(await store.runs.inputHolds(first, input)).toEqual({ sessionId, same: true });
    expect(await store.runs.inputHolds(first, `${input}j`)).toEqual({ sessionId, same: false });
    expect(await store.runs.inputHolds(fresh("run"), input)).toBeNull();
    // Another session may use the same key.
    const other = fresh("ses");
    await seedSession(store, { id: other });
    const live = fresh("run");
    await store.runs.create(runRecord({ id: live, sessionId: other, idempotencyKey: "key-1" }), []);
    // The active run is read as its id and key alone: not its input.
    expect(await store.runs.active(other)).toEqual({ id: live, idempotencyKey: "key-1" });
  });

  it("a tool call is decided once: a second decision is refused (decided) and the first stands", async () => {
    const { sessionId, runId } = await liveRun();
    const call = { id: fresh("call"), name: "shell", input: '{"command":"ls"}' };
    await store.commitRun(
      runId,
      [
        {
          kind: "message",
          message: message(sessionId, runId, 1, { role: "assistant", content: "", toolCalls: [call] } as never),
        },
        { kind: "toolCall.awaitingApproval", toolCallId: call.id, reason: "shell asks", at: at() },
        { kind: "status", status: "awaiting_approval" },
      ],
      [],
    );
    expect((await store.toolCalls.get(runId, call.id))?.state).toBe("awaiting_approval");
    const decide = (decision: "approve" | "deny") =>
      store.commitRun(runId, [{ kind: "toolCall.decided", toolCallId: call.id, decision, reason: null, at: at() }], []);
    await decide("approve");
    await expect(decide("deny")).rejects.toSatisfy((err) => isConflict(err, "decided"));
    await expect(decide("approve")).rejects.toSatisfy((err) => isConflict(err, "decided"));
    const stored = await store.toolCalls.get(runId, call.id);
    expect(stored).toMatchObject({ state: "approved", decision: "approve", approvalReason: "shell asks" });
    expect((await store.toolCalls.inState(runId, "approved")).map((c) => c.id)).toEqual([call.id]);
    expect((await store.runs.get(runId))?.status).toBe("awaiting_approval");
  });

  it("a tool call gets one result: a second is refused (call_closed) with its batch, and a closed call changes no more", async () => {
    const { sessionId, runId } = await liveRun();
    const call = { id: fresh("call"), name: "shell", input: '{"command":"ls"}' };
    const assistant = message(sessionId, runId, 1, { role: "assistant", content: "", toolCalls: [call] } as never);
    await store.commitRun(runId, [{ kind: "message", message: assistant }], []);
    const result = (seq: number, toolCallId = call.id) =>
      message(sessionId, runId, seq, toolResultMessage({ id: fresh("msg"), toolCallId, outcome: abortedOutcome() }));
    const first = result(2);
    await store.commitRun(runId, [{ kind: "message", message: first }], [event(runId, 2)]);

    // A second writer's result, an approval request or a start for the closed call: each batch refused whole.
    const refusals = [
      { kind: "message", message: result(3) },
      { kind: "toolCall.awaitingApproval", toolCallId: call.id, reason: "shell asks", at: at() },
      { kind: "toolCall.started", toolCallId: call.id, at: at() },
    ] as const;
    for (const change of refusals) {
      await expect(store.commitRun(runId, [change], [event(runId, 3)])).rejects.toSatisfy((err) =>
        isConflict(err, "call_closed"),
      );
    }
    // A result for a call the ledger does not hold is refused too.
    await expect(
      store.commitRun(runId, [{ kind: "message", message: result(3, "call_unknown") }], []),
    ).rejects.toSatisfy((err) => isConflict(err, "call_closed"));

    expect(await store.toolCalls.get(runId, call.id)).toMatchObject({ state: "finished", approvalReason: null });
    expect(await store.toolCalls.open(runId)).toEqual([]);
    const history = await store.messages.history(sessionId);
    expect(history.filter((m) => m.role === "tool").map((m) => m.id)).toEqual([first.id]);
    expect((await store.events.after(runId, 0)).map((e) => e.seq)).toEqual([1, 2]);
  });

  it("a tool call does not start once its run's cancel was requested (cancel_requested), and its batch is refused whole", async () => {
    const { sessionId, runId } = await liveRun();
    const call = { id: fresh("call"), name: "shell", input: '{"command":"ls"}' };
    const assistant = message(sessionId, runId, 1, { role: "assistant", content: "", toolCalls: [call] } as never);
    await store.commitRun(runId, [{ kind: "message", message: assistant }], []);
    await store.commitRequest(runId, [{ kind: "cancelRequested", at: at() }]);
    await expect(
      store.commitRun(runId, [{ kind: "toolCall.started", toolCallId: call.id, at: at() }], [event(runId, 2)]),
    ).rejects.toSatisfy((err) => isConflict(err, "cancel_requested"));
    expect(await store.toolCalls.get(runId, call.id)).toMatchObject({ state: "proposed" });
    expect((await store.events.after(runId, 0)).map((e) => e.seq)).toEqual([1]);
  });

  it("a run's tool calls keep the order they were proposed in, across its replies", async () => {
    const { sessionId, runId } = await liveRun();
    const calls = ["b", "a", "d", "c", "e"].map((name) => ({ id: fresh(`call_${name}`), name, input: "{}" }));
    const reply = (seq: number, toolCalls: typeof calls) => ({
      kind: "message" as const,
      message: message(sessionId, runId, seq, { role: "assistant", content: "", toolCalls } as never),
    });
    await store.commitRun(runId, [reply(1, calls.slice(0, 3))], []);
    await store.commitRun(runId, [reply(2, calls.slice(3))], []);
    expect((await store.toolCalls.open(runId)).map((c) => c.name)).toEqual(["b", "a", "d", "c", "e"]);
  });

  it("a call's status is its ledger row but its input; the rest of its reply is it and its reply's calls after it", async () => {
    const { sessionId, runId } = await liveRun();
    const calls = ["e", "c", "a", "d", "b"].map((name) => ({
      id: fresh(`call_${name}`),
      name,
      input: name.repeat(100_000),
    }));
    const ids = calls.map((call) => call.id);
    const reply = (seq: number, toolCalls: typeof calls, createdAt: string) => ({
      kind: "message" as const,
      message: message(sessionId, runId, seq, { role: "assistant", content: "", toolCalls, createdAt } as never),
    });
    await store.commitRun(
      runId,
      [
        reply(1, calls.slice(0, 3), "2026-01-01T00:00:00.000Z"),
        { kind: "toolCall.awaitingApproval", toolCallId: ids[1] as string, reason: "c asks", at: at() },
      ],
      [],
    );
    await store.commitRun(runId, [reply(2, calls.slice(3), "2026-01-01T00:00:01.000Z")], []);
    const { input, ...status } = (await store.toolCalls.get(runId, ids[1] as string)) ?? { input: "" };
    expect(input).toBe("c".repeat(100_000));
    expect(status).toMatchObject({ state: "awaiting_approval", approvalReason: "c asks", name: "c" });
    expect(await store.toolCalls.status(runId, ids[1] as string)).toEqual(status);
    expect(await store.toolCalls.status(runId, fresh("call"))).toBeNull();
    expect((await store.toolCalls.restOfReply(runId, ids[0] as string)).map((c) => c.id)).toEqual(ids.slice(0, 3));
    expect((await store.toolCalls.restOfReply(runId, ids[1] as string)).map((c) => c.id)).toEqual(ids.slice(1, 3));
    expect((await store.toolCalls.restOfReply(runId, ids[2] as string)).map((c) => c.id)).toEqual(ids.slice(2, 3));
    expect((await store.toolCalls.restOfReply(runId, ids[3] as string)).map((c) => c.id)).toEqual(ids.slice(3));
    expect(await store.toolCalls.restOfReply(runId, fresh("call"))).toEqual([]);
  });

  // A decision made within the millisecond and a model that answers at once (a scripted client on
  // localhost) give two replies of one run the same time: they are still two replies.
  it("the rest of a call's reply holds no call of another reply proposed within the same millisecond", async () => {
    const { sessionId, runId } = await liveRun();
    const ids = ["a", "b", "c", "d", "e"].map((name) => fresh(`call_${name}`));
    const calls = (from: number, to: number) => ids.slice(from, to).map((id) => ({ id, name: "t", input: "{}" }));
    const sameMs = "2026-01-01T00:00:00.000Z";
    const reply = (seq: number, toolCalls: ReturnType<typeof calls>) => ({
      kind: "message" as const,
      message: message(sessionId, runId, seq, {
        role: "assistant",
        content: "",
        toolCalls,
        createdAt: sameMs,
      } as never),
    });
    // Two replies in one commit, then a third in its own: all three at the same time.
    await store.commitRun(runId, [reply(1, calls(0, 2)), reply(2, calls(2, 3))], []);
    await store.commitRun(runId, [reply(3, calls(3, 5))], []);
    expect((await store.toolCalls.restOfReply(runId, ids[0] as string)).map((c) => c.id)).toEqual(ids.slice(0, 2));
    expect((await store.toolCalls.restOfReply(runId, ids[1] as string)).map((c) => c.id)).toEqual(ids.slice(1, 2));
    expect((await store.toolCalls.restOfReply(runId, ids[2] as string)).map((c) => c.id)).toEqual(ids.slice(2, 3));
    expect((await store.toolCalls.restOfReply(runId, ids[3] as string)).map((c) => c.id)).toEqual(ids.slice(3, 5));
    expect((await store.toolCalls.restOfReply(runId, ids[4] as string)).map((c) => c.id)).toEqual(ids.slice(4, 5));
    // The run's order is kept across them.
    expect((await store.toolCalls.open(runId)).map((c) => c.id)).toEqual(ids);
  });

  it("the heads of a run's events of one type are their seqs and first characters, in order", async () => {
    const { runId } = await liveRun();
    const asked = (seq: number, toolCallId: string): RunEvent => ({
      type: "approval.requested",
      toolCallId,
      tool: "write_file",
      input: { content: "x".repeat(200_000) },
      reason: "asks",
      runId,
      seq,
      at: at(),
    });
    await store.commitRun(runId, [], [asked(2, "call_é1"), event(runId, 3), asked(4, 'call_"2"')]);
    const whole = await store.events.ofType(runId, "approval.requested");
    expect(whole.map((e) => e.seq)).toEqual([2, 4]);
    expect(await store.events.headsOfType(runId, "approval.requested", 60)).toEqual(
      whole.map((e) => ({ seq: e.seq, head: e.data.slice(0, 60) })),
    );
    expect(await store.events.headsOfType(runId, "tool.started", 60)).toEqual([]);
  });

  it("events are kept per run in seq order, a seq is stored once, and reads page from any seq", async () => {
    const { runId } = await liveRun();
    for (let seq = 2; seq <= 40; seq += 3) {
      await store.commitRun(runId, [], [event(runId, seq), event(runId, seq + 1), event(runId, seq + 2)]);
    }
    await expect(store.commitRun(runId, [], [event(runId, 41), event(runId, 30, "again")])).rejects.toThrow();
    expect(await store.events.lastSeq(runId)).toBe(40);
    const all = await store.events.after(runId, 0);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(JSON.parse(all[29]?.data ?? "{}")).toMatchObject({ type: "text.delta", text: "t30", seq: 30, runId });
    expect((await store.events.after(runId, 35, 3)).map((e) => e.seq)).toEqual([36, 37, 38]);
    expect(await store.events.after(fresh("run"), 0)).toEqual([]);
  });

  it("a page of events within `bytes` reads only what their stored sizes fit (at least one), and says whether more follow", async () => {
    const { runId } = await liveRun();
    const big = "é".repeat(50_000); // 100 KB as UTF-8
    await store.commitRun(
      runId,
      [],
      [event(runId, 2, big), event(runId, 3, big), event(runId, 4), event(runId, 5, big)],
    );
    const page = (seq: number, limit: number, bytes: number) =>
      store.events.afterWithin(runId, seq, { limit, bytes }).then(({ events, more }) => ({
        seqs: events.map((e) => e.seq),
        more,
      }));
    expect(await page(0, 500, 150_000)).toEqual({ seqs: [1, 2], more: true });
    expect(await page(2, 500, 150_000)).toEqual({ seqs: [3, 4], more: true });
    // One event larger than `bytes` is read alone: a reader following `more` always moves on.
    expect(await page(4, 500, 1000)).toEqual({ seqs: [5], more: false });
    expect(await page(0, 2, 10_000_000)).toEqual({ seqs: [1, 2], more: true });
    expect(await page(0, 500, 10_000_000)).toEqual({ seqs: [1, 2, 3, 4, 5], more: false });
    expect(await page(5, 500, 1000)).toEqual({ seqs: [], more: false });
    expect(
      JSON.parse((await store.events.afterWithin(runId, 1, { limit: 1, bytes: 1 })).events[0]?.data ?? "{}"),
    ).toMatchObject({ text: big });
  });

  it("says whether a stored session has a shared workspace, until the last one having it is deleted", async () => {
    const workspace = `_shared/${fresh("team")}`;
    const first = fresh("ses");
    const second = fresh("ses");
    expect(await store.sessions.sharedWorkspaceInUse(workspace)).toBe(false);
    await seedSession(store, { id: first, workspace, workspaceShared: true });
    await seedSession(store, { id: second, workspace, workspaceShared: true });
    // A session's own workspace is never a shared one, whatever its name.
    const ownWorkspace = `_shared/${fresh("own")}`;
    await seedSession(store, { id: fresh("ses"), workspace: ownWorkspace });
    expect(await store.sessions.sharedWorkspaceInUse(ownWorkspace)).toBe(false);
    expect(await store.sessions.sharedWorkspaceInUse(workspace)).toBe(true);
    await store.sessions.delete(first);
    expect(await store.sessions.sharedWorkspaceInUse(workspace)).toBe(true);
    await store.sessions.delete(second);
    expect(await store.sessions.sharedWorkspaceInUse(workspace)).toBe(false);
  });

  it("lists page newest first by cursor, and history pages by seq", async () => {
    const owner = fresh("owner");
    const sessions: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = fresh("ses");
      sessions.push(id);
      await seedSession(store, { id, owner });
    }
    const page1 = await store.sessions.list({ owner, limit: 2, cursor: null });
    const page2 = await store.sessions.list({ owner, limit: 2, cursor: page1.nextCursor });
    const page3 = await store.sessions.list({ owner, limit: 2, cursor: page2.nextCursor });
    expect([...page1.items, ...page2.items, ...page3.items].map((s) => s.id)).toEqual([...sessions].reverse());
    expect(page3.nextCursor).toBeNull();
    expect(await store.sessions.countOf(owner)).toBe(5);
    expect(await store.sessions.get(sessions[0] as string, "someone else")).toBeNull();
    expect((await store.sessions.get(sessions[0] as string, owner))?.id).toBe(sessions[0]);

    const { sessionId, runId } = await liveRun();
    const messages = [1, 2, 3].map((seq) => message(sessionId, runId, seq));
    await store.commitRun(
      runId,
      messages.map((m) => ({ kind: "message" as const, message: m })),
      [],
    );
    const first = await store.messages.page({ sessionId, afterSeq: 0, limit: 2 });
    expect(first.items.map((m) => m.seq)).toEqual([1, 2]);
    expect(first.nextCursor).toBe("2");
    expect((await store.messages.page({ sessionId, afterSeq: 2, limit: 2 })).items.map((m) => m.seq)).toEqual([3]);
    // Newest first: before a seq, the first page before any seq a session can hold.
    const newest = await store.messages.page({ sessionId, afterSeq: 0, beforeSeq: MAX_KEY + 1, limit: 2 });
    expect(newest.items.map((m) => m.seq)).toEqual([3, 2]);
    expect(newest.nextCursor).toBe("2");
    const older = await store.messages.page({ sessionId, afterSeq: 0, beforeSeq: 2, limit: 2 });
    expect(older.items.map((m) => m.seq)).toEqual([1]);
    expect(older.nextCursor).toBeNull();
    expect(await store.messages.lastSeq(sessionId)).toBe(3);
    expect((await store.messages.history(sessionId)).map((m) => m.seq)).toEqual([1, 2, 3]);
    expect(await store.messages.history(sessionId, 1)).toEqual((await store.messages.history(sessionId)).slice(1));
    expect(await store.messages.history(sessionId, 3)).toEqual([]);
  });

  it("a page of large rows reads only what its stored sizes fit in `bytes` (at least one row), and its cursor goes on", async () => {
    const owner = fresh("owner");
    const sessions: string[] = [];
    // 6 sessions of ~4 KB each against a budget of 10 KB: two a page, one for the largest.
    for (const size of [4000, 4000, 4000, 4000, 12_000, 4000]) {
      const id = fresh("ses");
      sessions.push(id);
      await seedSession(store, { id, owner, system: "s".repeat(size - 1000), metadata: { note: "m".repeat(1000) } });
    }
    const pages: string[][] = [];
    for (let cursor: string | null = null, n = 0; n === 0 || cursor !== null; n++) {
      const page: Awaited<ReturnType<Store["sessions"]["list"]>> = await store.sessions.list({
        owner,
        limit: 200,
        cursor,
        bytes: 10_000,
      });
      pages.push(page.items.map((s) => s.id));
      cursor = page.nextCursor;
    }
    const newestFirst = [...sessions].reverse();
    expect(pages).toEqual([
      newestFirst.slice(0, 1),
      newestFirst.slice(1, 2),
      newestFirst.slice(2, 4),
      newestFirst.slice(4),
    ]);
    // The count bound still applies; without a byte bound the page is as before.
    expect((await store.sessions.list({ owner, limit: 2, cursor: null, bytes: 10_000 })).items).toHaveLength(1);
    expect((await store.sessions.list({ owner, limit: 3, cursor: null })).items).toHaveLength(3);

    const { sessionId, runId } = await liveRun();
    await store.commitRun(
      runId,
      [1, 2, 3, 4, 5].map((seq) => ({
        kind: "message" as const,
        message: message(sessionId, runId, seq, { content: "c".repeat(seq === 2 ? 20_000 : 3000) }),
      })),
      [],
    );
    const seqs: number[][] = [];
    for (let afterSeq = 0; ; ) {
      const page = await store.messages.page({ sessionId, afterSeq, limit: 200, bytes: 10_000 });
      seqs.push(page.items.map((m) => m.seq));
      if (page.nextCursor === null) break;
      afterSeq = Number(page.nextCursor);
    }
    expect(seqs).toEqual([[1], [2], [3, 4], [5]]);

    const big = fresh("ses");
    await seedSession(store, { id: big });
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = fresh("run");
      runs.push(id);
      await store.runs.create(runRecord({ id, sessionId: big, status: "queued", input: "i".repeat(6000) }), []);
    }
    const first = await store.runs.list({ sessionId: big, limit: 200, cursor: null, bytes: 10_000 });
    expect(first.items.map((r) => r.id)).toEqual([runs[2]]);
    const rest = await store.runs.list({ sessionId: big, limit: 200, cursor: first.nextCursor, bytes: 20_000 });
    expect(rest).toEqual({ items: [runs[1], runs[0]].map((id) => expect.objectContaining({ id })), nextCursor: null });
  });

  it("the webhook outbox: deliveries are written with the events that cause them, claimed once, and recorded", async () => {
    const sessionId = fresh("ses");
    const runId = fresh("run");
    await seedSession(store, { id: sessionId });
    const webhook = { url: "https://hooks.example.com/in", events: ["run.started" as const, "run.finished" as const] };
    await store.runs.create(runRecord({ id: runId, sessionId, webhook }), [
      { type: "run.started", runId, seq: 1, at: at() },
    ]);
    // The run's end is a second delivery, written with its event.
    await expect(
      store.commitRun(
        runId,
        [{ kind: "message", message: message(sessionId, runId, 5) }, finishChange()],
        [{ type: "run.finished", runId, seq: 2, at: at(), run: {} } as unknown as RunEvent],
      ),
    ).resolves.toBeDefined();
    const deliveries = await allDeliveries(store, runId);
    expect(deliveries.map((d) => [d.type, d.status, d.url])).toEqual([
      ["run.started", "pending", webhook.url],
      ["run.finished", "pending", webhook.url],
    ]);
    // A listing reads no body; a claim (the worker's) reads them.
    expect(deliveries[0]).not.toHaveProperty("body");
    const now = Date.now() + 1000;
    const [first, second] = await Promise.all([
      store.webhooks.claim({ now, leaseUntil: now + 60_000, limit: 10, perOwner: 10 }),
      store.webhooks.claim({ now, leaseUntil: now + 60_000, limit: 10, perOwner: 10 }),
    ]);
    const ofThisRun = [...first!, ...second!].filter((d) => d.runId === runId);
    expect(ofThisRun.map((d) => d.id).sort()).toEqual(deliveries.map((d) => d.id).sort());
    const started = ofThisRun.find((d) => d.id === deliveries[0]!.id);
    expect(JSON.parse(started!.body)).toMatchObject({ type: "run.started", data: { runId, sessionId } });
    const attempt = { at: at(), statusCode: 200, error: null };
    await store.webhooks.record({ id: deliveries[0]!.id, attempt, next: { status: "delivered" } });
    const after = await allDeliveries(store, runId);
    expect(after[0]).toMatchObject({ status: "delivered", attempts: [attempt], nextAttemptAt: null });
    expect(after[1]).toMatchObject({ status: "pending", nextAttemptAt: now + 60_000 });
  });

  // A start finds its session, and another instance deletes it before the run is stored.
  it("a run for a session deleted meanwhile is refused as session_gone, and nothing of it is stored", async () => {
    const sessionId = fresh("ses");
    const runId = fresh("run");
    await seedSession(store, { id: sessionId });
    expect(await store.sessions.delete(sessionId)).toBe(true);
    const refused = store.runs.create(runRecord({ id: runId, sessionId }), [
      { type: "run.started", runId, seq: 1, at: at() },
    ]);
    await expect(refused).rejects.toSatisfy((err) => isConflict(err, "session_gone"));
    expect(await store.runs.get(runId)).toBeNull();
    expect(await store.events.after(runId, 0)).toEqual([]);
  });

  it("a session with an unfinished run, live or queued, is not deleted (active_run) and keeps all of it", async () => {
    const { sessionId, runId } = await liveRun();
    const queuedId = fresh("run");
    await store.runs.create(runRecord({ id: queuedId, sessionId, status: "queued" }), [
      { type: "run.queued", runId: queuedId, seq: 1, at: at() },
    ]);
    await expect(store.sessions.delete(sessionId)).rejects.toSatisfy((err) => isConflict(err, "active_run"));
    await finish(runId);
    await expect(store.sessions.delete(sessionId)).rejects.toSatisfy((err) => isConflict(err, "active_run"));
    expect(await store.sessions.get(sessionId)).not.toBeNull();
    expect((await store.runs.get(runId))?.status).toBe("finished");
    expect((await store.events.after(runId, 0)).map((e) => e.seq)).toEqual([1]);
    expect((await store.runs.get(queuedId))?.status).toBe("queued");
  });

  it("a finished run is no longer the session's active run, and deleting the session deletes its runs", async () => {
    const { sessionId, runId } = await liveRun();
    expect((await store.runs.unfinished()).map((r) => r.id)).toContain(runId);
    await finish(runId);
    await expect(finish(runId)).rejects.toSatisfy((err) => isConflict(err, "run_not_live"));
    expect(await store.runs.active(sessionId)).toBeNull();
    expect((await store.runs.unfinished()).map((r) => r.id)).not.toContain(runId);
    expect((await store.runs.get(runId))?.stopReason).toBe("complete");
    await store.probeWrites();
    expect(store.writeFailure()).toBeNull();
    expect(await store.sessions.delete(sessionId)).toBe(true);
    expect(await store.runs.get(runId)).toBeNull();
    expect(await store.events.after(runId, 0)).toEqual([]);
    expect(await store.sessions.delete(sessionId)).toBe(false);
  });

  it("whether a run has committed a message is known without reading one", async () => {
    const { sessionId, runId } = await liveRun();
    const other = fresh("run");
    await store.runs.create(runRecord({ id: other, sessionId, status: "queued" }), []);
    expect(await store.messages.anyOfRun(sessionId, runId)).toBe(false);
    await store.commitRun(runId, [{ kind: "message", message: message(sessionId, runId, 1) }], []);
    expect(await store.messages.anyOfRun(sessionId, runId)).toBe(true);
    expect(await store.messages.anyOfRun(sessionId, other)).toBe(false);
    expect(await store.messages.anyOfRun(fresh("ses"), runId)).toBe(false);
  });

  it("a session's access is its owner, whatever its system prompt; none for a session that is not", async () => {
    const owned = fresh("ses");
    await seedSession(store, { id: owned, owner: "owner_a", system: "s".repeat(100_000) });
    expect(await store.sessions.access(owned)).toEqual({ owner: "owner_a" });
    const unowned = fresh("ses");
    await seedSession(store, { id: unowned });
    expect(await store.sessions.access(unowned)).toEqual({ owner: null });
    expect(await store.sessions.access(fresh("ses"))).toBeNull();
    expect(await store.sessions.delete(owned)).toBe(true);
    expect(await store.sessions.access(owned)).toBeNull();
  });

  it("a run's access is its session, status, owner and who asked to cancel it, whatever its input; none for a run that is not", async () => {
    const sessionId = fresh("ses");
    const runId = fresh("run");
    await seedSession(store, { id: sessionId, owner: "owner_a", system: "s".repeat(100_000) });
    await store.runs.create(runRecord({ id: runId, sessionId, input: "x".repeat(100_000) }), [
      { type: "run.started", runId, seq: 1, at: at() },
    ]);
    const cancelledBy = null;
    expect(await store.runs.access(runId)).toEqual({ sessionId, status: "running", owner: "owner_a", cancelledBy });
    await finish(runId);
    expect(await store.runs.access(runId)).toEqual({ sessionId, status: "finished", owner: "owner_a", cancelledBy });
    const { runId: unowned, sessionId: unownedSession } = await liveRun();
    expect(await store.runs.access(unowned)).toEqual({
      sessionId: unownedSession,
      status: "running",
      owner: null,
      cancelledBy,
    });
    expect(await store.runs.access(fresh("run"))).toBeNull();
  });
});
