import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClaimQuery, Store } from "../../src/store/store.js";
import { seedDeliveries } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** The outbox's claim shares the slots among owners, the same on every backend. */
describe.each(STORE_BACKENDS)("webhook claims on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  /** `count` due deliveries of `owner`, each a few ms later than the one before (the claim order is theirs); their ids. */
  const deliveries = async (owner: string | null, count: number): Promise<string[]> =>
    (await seedDeliveries(store, { owner, count, gapMs: 2 })).map((d) => d.deliveryId);
  const claim = (query: Omit<ClaimQuery, "now" | "leaseUntil">) => {
    const now = Date.now() + 1000;
    return store.webhooks.claim({ now, leaseUntil: now + 60_000, ...query });
  };

  it("one owner's many older deliveries take at most perOwner slots: a newer one of another owner is claimed with them", async () => {
    const flood = await deliveries("key_a", 30);
    const [other] = await deliveries("key_b", 1);
    const [keyless] = await deliveries(null, 1);
    const claimed = await claim({ limit: 8, perOwner: 4 });
    expect(claimed.map((d) => d.id).sort()).toEqual([...flood.slice(0, 4), other, keyless].sort());
    expect(claimed.find((d) => d.id === other)?.owner).toBe("key_b");
    expect(claimed.find((d) => d.id === keyless)?.owner).toBeNull();

    // Leased: the next claim takes the flood's next oldest; an owner's `busy` sends count against its room.
    const next = await claim({ limit: 8, perOwner: 4, busy: new Map([["key_a", 3]]) });
    expect(next.map((d) => d.id)).toEqual([flood[4]]);
    expect(await claim({ limit: 8, perOwner: 4, busy: new Map([["key_a", 4]]) })).toEqual([]);
    // `limit` bounds the whole claim, the oldest first.
    expect((await claim({ limit: 2, perOwner: 4 })).map((d) => d.id)).toEqual(flood.slice(5, 7));
  });

  it("slots that free go to each owner's first due delivery before anyone's second: an older backlog does not take them all", async () => {
    // Found in review: with C's sends holding 8 slots (a target that never answers) and A's 8
    // just ended, every freed slot went to A's older backlog, and B waited behind all of it.
    // (key_a's backlog of the test before is still due, older than all of these.)
    const a = await deliveries("key_ra", 12);
    await deliveries("key_rc", 12);
    const [b] = await deliveries("key_rb", 1);
    const claimed = await claim({ limit: 8, perOwner: 8, busy: new Map([["key_rc", 8]]) });
    expect(claimed).toHaveLength(8);
    expect(claimed.map((d) => d.id)).toContain(b);
    expect(claimed.map((d) => d.id)).toContain(a[0]);
    expect(claimed.filter((d) => d.owner === "key_rc")).toEqual([]);
  });

  it("an owner's own limit replaces perOwner; the confined owners' deliveries take at most their room together, skipped without blocking the rest", async () => {
    // (The backlogs of the tests before are still due, older than these: perOwner 0 leaves them out.)
    const [f1] = await deliveries("key_f1", 2);
    const [f2] = await deliveries("key_f2", 2);
    await deliveries("key_f3", 2);
    const s1 = await deliveries("key_s1", 4);
    const h = await deliveries("key_h", 2);
    const limits = new Map([
      ["key_f1", 1],
      ["key_f2", 1],
      ["key_f3", 1],
      ["key_s1", 3],
      ["key_h", 2],
    ]);
    const failing = new Set(["key_f1", "key_f2", "key_f3"]);
    // Each owner's first, the oldest first: f1's, then f2's and f3's are skipped (the confined
    // room is 1), and s1's and h's come after them within the limit of 3.
    const first = await claim({ limit: 3, perOwner: 0, limits, confined: { owners: failing, room: 1 } });
    expect(first.map((d) => d.id)).toEqual([f1, s1[0], h[0]]);
    // Those three under way: f1 is at its limit, one confined slot is left (f2's, the older), s1 has 2, h 1.
    const busy = new Map([
      ["key_f1", 1],
      ["key_s1", 1],
      ["key_h", 1],
    ]);
    const second = await claim({ limit: 16, perOwner: 0, limits, busy, confined: { owners: failing, room: 1 } });
    expect(second.map((d) => d.id).sort()).toEqual([f2, s1[1], s1[2], h[1]].sort());
    // With no confined room left, none of the failing owners' is claimed; s1's last still is.
    const third = await claim({ limit: 16, perOwner: 0, limits, confined: { owners: failing, room: 0 } });
    expect(third.map((d) => d.id)).toEqual([s1[3]]);
  });
});
