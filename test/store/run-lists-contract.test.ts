import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ListPage, Store } from "../../src/store/store.js";
import { allDeliveries, seedLargeRun, stepOf } from "../helpers/run-lists.js";
import { seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** A run's lists as pages (steps, calls awaiting approval, webhook deliveries): the same on every backend. */
describe.each(STORE_BACKENDS)("a run's list pages on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}_${String(++counter).padStart(4, "0")}`;

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  async function run(options: Omit<Parameters<typeof seedLargeRun>[1], "sessionId" | "runId">) {
    const sessionId = fresh("ses");
    const runId = fresh("run");
    await seedSession(store, { id: sessionId });
    const callIds = await seedLargeRun(store, { sessionId, runId, ...options });
    return { runId, callIds };
  }

  /** Every page from the first, following the cursors: each page's keys and its cursor. */
  async function follow<T>(
    read: (after: number | null) => Promise<ListPage<T>>,
    keyOf: (item: T) => number | string,
  ): Promise<{ keys: (number | string)[]; nextCursor: string | null }[]> {
    const pages: { keys: (number | string)[]; nextCursor: string | null }[] = [];
    for (let cursor: string | null = null; pages.length === 0 || cursor !== null; ) {
      const page = await read(cursor === null ? null : Number(cursor));
      pages.push({ keys: page.items.map(keyOf), nextCursor: page.nextCursor });
      cursor = page.nextCursor;
      expect(pages.length).toBeLessThan(100);
    }
    return pages;
  }

  it("steps: by turn after the cursor, at most `limit`, the cursor the last one's turn", async () => {
    const { runId } = await run({ steps: 7 });
    const pages = await follow(
      (after) => store.steps.page({ runId, after, limit: 3 }),
      (s) => s.turn,
    );
    expect(pages).toEqual([
      { keys: [1, 2, 3], nextCursor: "3" },
      { keys: [4, 5, 6], nextCursor: "6" },
      { keys: [7], nextCursor: null },
    ]);
    expect((await store.steps.page({ runId, after: 2, limit: 1 })).items).toEqual([stepOf(3)]);
    expect(await store.steps.page({ runId, after: 7, limit: 3 })).toEqual({ items: [], nextCursor: null });
    expect(await store.steps.page({ runId: "run_none", after: null, limit: 3 })).toEqual({
      items: [],
      nextCursor: null,
    });
  });

  it("steps.last: the trace of the run's latest turn alone, null for a run without one", async () => {
    const { runId } = await run({ steps: 7 });
    expect(await store.steps.last(runId)).toEqual(stepOf(7));
    expect(await store.steps.last("run_none")).toBeNull();
  });

  it("steps: only as many as their stored sizes fit in `bytes`, at least one", async () => {
    const { runId } = await run({ steps: 5, stepBytes: 10_000 });
    const pages = await follow(
      (after) => store.steps.page({ runId, after, limit: 50, bytes: 25_000 }),
      (s) => s.turn,
    );
    expect(pages.map((p) => p.keys)).toEqual([[1, 2], [3, 4], [5]]);
    // A step larger than the page comes alone.
    const alone = await store.steps.page({ runId, after: null, limit: 50, bytes: 1_000 });
    expect(alone.items.map((s) => s.turn)).toEqual([1]);
    expect(alone.nextCursor).toBe("1");
  });

  it("calls awaiting approval: in the ledger's order (not their ids'), each with its ordinal, decided ones left out", async () => {
    const { runId, callIds } = await run({ approvals: 6, inputBytes: 10_000 });
    expect([...callIds].sort()).not.toEqual(callIds);
    await store.commitRun(
      runId,
      [{ kind: "toolCall.decided", toolCallId: callIds[1] as string, decision: "approve", reason: null, at: "x" }],
      [],
    );
    const awaiting = callIds.filter((_, i) => i !== 1);
    const pages = await follow(
      (after) => store.toolCalls.awaitingApproval({ runId, after, limit: 2 }),
      (c) => c.id,
    );
    expect(pages.map((p) => p.keys)).toEqual([awaiting.slice(0, 2), awaiting.slice(2, 4), awaiting.slice(4)]);
    const [first] = (await store.toolCalls.awaitingApproval({ runId, after: null, limit: 1 })).items;
    expect(first).toEqual({ ...(await store.toolCalls.get(runId, callIds[0] as string)), ordinal: 0 });
    expect(first?.input).toHaveLength(JSON.stringify({ path: "f0.txt", content: "".padEnd(10_000) }).length);
    // Its stored input counts: 25 KB hold two of 10 KB.
    const sized = await store.toolCalls.awaitingApproval({ runId, after: null, limit: 50, bytes: 25_000 });
    expect(sized.items.map((c) => c.id)).toEqual(awaiting.slice(0, 2));
    expect(sized.nextCursor).toBe(String(sized.items[1]?.ordinal));
  });

  it("webhook deliveries: by their event's seq, without bodies, each with that seq", async () => {
    const { runId } = await run({ approvals: 5 });
    const all = await allDeliveries(store, runId);
    expect(all).toHaveLength(5);
    const pages = await follow(
      (after) => store.webhooks.page({ runId, after, limit: 2 }),
      (d) => d.id,
    );
    expect(pages.map((p) => p.keys)).toEqual(
      [all.slice(0, 2), all.slice(2, 4), all.slice(4)].map((s) => s.map((d) => d.id)),
    );
    const page = await store.webhooks.page({ runId, after: null, limit: 5 });
    expect(page.items.map(({ eventSeq: _seq, ...listing }) => listing)).toEqual(all);
    expect(page.items[0]).not.toHaveProperty("body");
    const seqs = page.items.map((d) => d.eventSeq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(page.nextCursor).toBeNull();
    const after = await store.webhooks.page({ runId, after: seqs[2] as number, limit: 5 });
    expect(after.items.map((d) => d.id)).toEqual(all.slice(3).map((d) => d.id));
  });
});
