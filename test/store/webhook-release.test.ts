import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { allDeliveries } from "../helpers/run-lists.js";
import { seedDeliveries } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/**
 * A try cut by a shutdown gives its delivery back: due again at once, with no attempt, rather
 * than waiting out a lease sized for the longest try. Only a delivery still pending and still
 * leased as the cut try claimed it is given back.
 */
describe.each(STORE_BACKENDS)("giving back a claimed webhook delivery on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  /** A new run with one pending delivery, of an owner of its own; their ids. */
  const pending = async () => {
    const [seeded] = await seedDeliveries(store, { owner: `key_rel_${++counter}`, count: 1 });
    return seeded as { runId: string; deliveryId: string };
  };
  const claim = (now: number, leaseUntil: number) => store.webhooks.claim({ now, leaseUntil, limit: 100, perOwner: 1 });

  it("a delivery given back is claimed again at once, with no attempt recorded", async () => {
    const { deliveryId: id } = await pending();
    const now = Date.now();
    const first = await claim(now, now + 120_000);
    expect(first.map((d) => d.id)).toContain(id);
    expect((await claim(now + 1, now + 120_000)).map((d) => d.id)).not.toContain(id);
    await store.webhooks.release({ id, leaseUntil: now + 120_000, at: now + 2 });
    const again = await claim(now + 3, now + 130_000);
    expect(again.map((d) => d.id)).toContain(id);
    expect(again.find((d) => d.id === id)?.attempts).toEqual([]);
  });

  it("one claimed again since (another lease), or settled, is left as it is", async () => {
    const now = Date.now() + 1_000_000;
    const { deliveryId: reclaimed } = await pending();
    const { runId: settledRun, deliveryId: settled } = await pending();
    await claim(now, now + 100);
    // The lease ran out and another claim took both.
    const later = await claim(now + 200, now + 60_000);
    expect(later.map((d) => d.id)).toEqual(expect.arrayContaining([reclaimed, settled]));
    await store.webhooks.record({
      id: settled,
      attempt: { at: new Date(now + 300).toISOString(), statusCode: 200, error: null },
      next: { status: "delivered" },
    });
    // The first claim's try, cut late, gives back nothing.
    await store.webhooks.release({ id: reclaimed, leaseUntil: now + 100, at: now + 400 });
    await store.webhooks.release({ id: settled, leaseUntil: now + 60_000, at: now + 400 });
    expect((await claim(now + 500, now + 70_000)).map((d) => d.id)).not.toContain(reclaimed);
    const [delivered] = (await allDeliveries(store, settledRun)).filter((d) => d.id === settled);
    expect(delivered?.status).toBe("delivered");
  });

  it("postponing a receiver's deliveries moves its owner's due ones to it, one claimed keeping its lease, others' and other receivers' left", async () => {
    const now = Date.now() + 3_000_000;
    const owner = `key_rel_${++counter}`;
    const dead = "https://dead.example.com/in";
    const due = await seedDeliveries(store, { owner, count: 3, url: dead });
    const [elsewhere] = await seedDeliveries(store, { owner, count: 1 });
    const [otherOwner] = await seedDeliveries(store, { owner: `key_rel_${++counter}`, count: 1, url: dead });
    // One of the three is claimed (its try under way): leased past `dueBy`.
    const [claimed] = await store.webhooks.claim({
      now,
      leaseUntil: now + 60_000,
      limit: 1,
      perOwner: 1,
      limits: new Map([[owner, 1]]),
      confined: { owners: new Set([owner]), room: 1 },
    });
    expect(due.map((d) => d.deliveryId)).toContain(claimed?.id);
    expect(await store.webhooks.postpone({ owner, url: dead, dueBy: now + 10, at: now + 5_000 })).toBe(2);
    const ids = async (at: number) =>
      (await store.webhooks.claim({ now: at, leaseUntil: at + 100, limit: 100, perOwner: 100 })).map((d) => d.id);
    const before = await ids(now + 4_000);
    expect(before).toEqual(expect.arrayContaining([elsewhere?.deliveryId, otherOwner?.deliveryId]));
    expect(before.filter((id) => due.some((d) => d.deliveryId === id))).toEqual([]);
    // The claim's lease is as it was: it gives its delivery back, the others come due at `at`.
    await store.webhooks.release({ id: claimed?.id as string, leaseUntil: now + 60_000, at: now + 5_000 });
    const after = await ids(now + 5_000);
    expect(after.filter((id) => due.some((d) => d.deliveryId === id)).sort()).toEqual(
      due.map((d) => d.deliveryId).sort(),
    );
  });

  it("a delivery expired under its lease is failed with the reason and no attempt; one leased to another claim since is left pending", async () => {
    const now = Date.now() + 2_000_000;
    const { runId, deliveryId: expired } = await pending();
    const { runId: otherRun, deliveryId: reclaimed } = await pending();
    await claim(now, now + 100);
    const later = await claim(now + 200, now + 60_000);
    expect(later.map((d) => d.id)).toEqual(expect.arrayContaining([expired, reclaimed]));
    const at = new Date(now + 300).toISOString();
    expect(await store.webhooks.expire({ id: expired, leaseUntil: now + 60_000, reason: "window closed", at })).toBe(
      true,
    );
    // The first claim's lease is gone: its expiry changes nothing, and says so.
    expect(await store.webhooks.expire({ id: reclaimed, leaseUntil: now + 100, reason: "window closed", at })).toBe(
      false,
    );
    const [failed] = (await allDeliveries(store, runId)).filter((d) => d.id === expired);
    expect(failed).toMatchObject({ status: "failed", reason: "window closed", finishedAt: at, attempts: [] });
    const [still] = (await allDeliveries(store, otherRun)).filter((d) => d.id === reclaimed);
    expect(still?.status).toBe("pending");
  });
});
