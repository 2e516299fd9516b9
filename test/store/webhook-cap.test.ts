import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { allDeliveries } from "../helpers/run-lists.js";
import { seedDeliveries } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/**
 * A key whose receiver is down piled up pending deliveries without bound (each run makes
 * several, each retried for 24 h). Past WEBHOOK_MAX_PENDING_PER_KEY its newest are given up,
 * with their reason, the same on every backend; nothing else is touched.
 */
describe.each(STORE_BACKENDS)("giving up an owner's pending webhook deliveries past the cap on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  /** `count` runs of new sessions of `owner`, each with its run.started delivery, each event a few ms after the one before; their ids. */
  const runsOf = async (owner: string | null, count: number): Promise<string[]> =>
    (await seedDeliveries(store, { owner, count, gapMs: 3 })).map((d) => d.runId);
  const deliveryOf = async (runId: string) => (await allDeliveries(store, runId))[0];
  const at = "2030-01-01T00:00:00.000Z";

  it("each owner's pending past its oldest `cap` are failed with the reason, unsent bodies dropped; the rest are untouched", async () => {
    const down = await runsOf("key_down", 5);
    const up = await runsOf("key_up", 3);
    const keyless = await runsOf(null, 4);
    // A delivery that left pending does not count: key_back has 3 pending.
    const back = await runsOf("key_back", 4);
    const oldest = await deliveryOf(back[0] as string);
    await store.webhooks.record({
      id: oldest?.id as string,
      attempt: { at, statusCode: 200, error: null },
      next: { status: "delivered" },
    });

    const given = await store.webhooks.giveUpPastCap({ cap: 3, reason: "over the cap", at });
    expect(given).toEqual(
      new Map([
        ["key_down", 2],
        [null, 1],
      ]),
    );
    const statuses = async (runs: string[]) => Promise.all(runs.map(async (id) => (await deliveryOf(id))?.status));
    expect(await statuses(down)).toEqual(["pending", "pending", "pending", "failed", "failed"]);
    expect(await statuses(keyless)).toEqual(["pending", "pending", "pending", "failed"]);
    expect(await statuses(up)).toEqual(["pending", "pending", "pending"]);
    expect(await statuses(back)).toEqual(["delivered", "pending", "pending", "pending"]);
    expect(await deliveryOf(down[4] as string)).toMatchObject({
      status: "failed",
      reason: "over the cap",
      finishedAt: at,
      nextAttemptAt: null,
      attempts: [],
    });
    expect(await deliveryOf(down[2] as string)).toMatchObject({ reason: null });
    // The runs are as they were: their events stay.
    expect((await store.events.after(down[4] as string, 0)).map((e) => e.type)).toEqual(["run.started"]);
    // Given up once: nothing is past the cap any more, and no claim takes them.
    expect(await store.webhooks.giveUpPastCap({ cap: 3, reason: "over the cap", at })).toEqual(new Map());
    const now = Date.now() + 1000;
    const claimed = await store.webhooks.claim({ now, leaseUntil: now + 60_000, limit: 100, perOwner: 100 });
    expect(claimed.map((d) => d.runId)).not.toContain(down[4]);
    expect(claimed.map((d) => d.runId)).toContain(down[2]);
    expect(claimed.find((d) => d.runId === down[2])?.body).toContain("run.started");
  });

  it("a try that ends after its delivery was given up is listed, and the delivery stays given up", async () => {
    const [newest] = (await runsOf("key_racing", 2)).slice(1);
    const now = Date.now() + 1000;
    const claimed = await store.webhooks.claim({ now, leaseUntil: now + 60_000, limit: 100, perOwner: 100 });
    const inFlight = claimed.find((d) => d.runId === newest);
    expect(inFlight).toBeDefined();
    // (The other owners' deliveries of the test before are past a cap of 1 too.)
    const given = await store.webhooks.giveUpPastCap({ cap: 1, reason: "over the cap", at });
    expect(given.get("key_racing")).toBe(1);
    const attempt = { at, statusCode: 503, error: null };
    await store.webhooks.record({ id: inFlight?.id as string, attempt, next: { status: "pending", at: now } });
    expect(await deliveryOf(newest as string)).toMatchObject({
      status: "failed",
      reason: "over the cap",
      attempts: [attempt],
      nextAttemptAt: null,
    });
  });
});
