import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store, WebhookAttempt, WebhookDelivery } from "../../src/store/store.js";
import type { WebhookSender } from "../../src/webhooks/send.js";
import { SendShares } from "../../src/webhooks/send-shares.js";
import { WebhookWorker } from "../../src/webhooks/worker.js";
import { FAILING_SLOTS, WEBHOOK_SLOTS } from "../../src/webhooks/worker-limits.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

describe("an owner's share of the send slots", () => {
  it("starts at one, grows by one with each 2xx up to the most, and falls back to one, failing, on a failed try", () => {
    const shares = new SendShares(4);
    expect(shares.limitOf("key")).toBe(1);
    for (const expected of [2, 3, 4, 4]) {
      shares.record("key", "ok");
      expect(shares.limitOf("key")).toBe(expected);
    }
    expect(shares.failing.has("key")).toBe(false);
    shares.record("key", "failed");
    expect(shares.limitOf("key")).toBe(1);
    expect(shares.failing).toEqual(new Set(["key"]));
    shares.record("key", "ok");
    expect(shares.limitOf("key")).toBe(2);
    expect(shares.failing.size).toBe(0);
    // Owners are apart: the keyless server's (null) is one like any other.
    shares.record(null, "failed");
    expect(shares.limitOf("key")).toBe(2);
    expect(shares.failing).toEqual(new Set([null]));
  });

  it("a 2xx that came past the stuck threshold neither grows the share nor clears failing", () => {
    const shares = new SendShares(4);
    shares.record("key", "slow");
    expect(shares.limitOf("key")).toBe(1);
    shares.record("key", "ok");
    shares.record("key", "slow");
    expect(shares.limitOf("key")).toBe(2);
    shares.record("key", "failed");
    shares.record("key", "slow");
    expect(shares.limitOf("key")).toBe(1);
    expect(shares.failing).toEqual(new Set(["key"]));
  });
});

const TARPIT = "https://tarpit.example.com/in";
const RECEIVER = "https://receiver.example.com/in";
let cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** `count` deliveries (run.started) of `owner` to `url`, each of its own run. */
async function deliveries(store: Store, owner: string, url: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const sessionId = `ses_${owner}_${url.length}_${i}`;
    await seedSession(store, { id: sessionId, owner });
    const runId = `run_${owner}_${url.length}_${i}`;
    const started: RunEvent = { type: "run.started", runId, seq: 1, at: new Date().toISOString() };
    await store.runs.create(runRecord({ id: runId, sessionId, webhook: { url, events: ["run.started"] } }), [started]);
  }
}

// Found in review of the per-owner shares: one slot per key that never answers still gives 16
// such keys every slot. The failing keys share FAILING_SLOTS; the other half stays free.
describe("many keys whose receivers never answer", () => {
  it("20 failing keys hold FAILING_SLOTS sends at most: another key's delivery is sent at once", async () => {
    const dir = tempDir("shares-");
    const store = openSqliteStore({ path: join(dir.path, "agent.db") });
    cleanups.push(
      () => dir.cleanup(),
      () => store.close(),
    );
    const attackers = Array.from({ length: 20 }, (_, i) => `key_${String(i).padStart(2, "0")}`);
    for (const owner of attackers) await deliveries(store, owner, TARPIT, 3);

    // A tarpit's first try is refused at once (its key is failing from then on); every later one hangs.
    const tries = new Map<string | null, number>();
    const hanging = new Set<() => void>();
    let mostHanging = 0;
    const sent: WebhookDelivery[] = [];
    const at = () => new Date().toISOString();
    const sender = {
      async send(delivery: WebhookDelivery): Promise<WebhookAttempt> {
        sent.push(delivery);
        if (delivery.url !== TARPIT) return { at: at(), statusCode: 200, error: null };
        const nth = (tries.get(delivery.owner) ?? 0) + 1;
        tries.set(delivery.owner, nth);
        if (nth === 1) return { at: at(), statusCode: 503, error: null };
        await new Promise<void>((resolve) => {
          hanging.add(resolve);
          mostHanging = Math.max(mostHanging, hanging.size);
        });
        return { at: at(), statusCode: null, error: "timed out" };
      },
      close: async () => {},
    };
    const worker = new WebhookWorker({
      store,
      sender: sender as unknown as WebhookSender,
      schedule: { baseMs: 10, maxMs: 10, windowMs: 3_600_000 },
      timeoutMs: 60_000,
      pollMs: 10,
      logger: pino({ level: "silent" }),
      maxPendingPerKey: 10_000,
    });
    worker.start();
    cleanups.push(async () => {
      for (const resolve of hanging) resolve();
      hanging.clear();
      await worker.stop();
    });

    // The attackers have failed once (16 of them at least: as many as the slots), and the failing
    // keys' share of slots hangs; a few polls let the worker hand out every slot it would.
    await until(
      () => tries.size >= WEBHOOK_SLOTS && hanging.size >= FAILING_SLOTS,
      Boolean,
      "the attackers to have failed once and their retries to hang",
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await deliveries(store, "key_b", RECEIVER, 1);
    await until(() => sent.some((d) => d.owner === "key_b"), Boolean, "key_b's delivery to be sent");
    expect(mostHanging).toBe(FAILING_SLOTS);
    expect(attackers.filter((owner) => tries.has(owner))).toEqual(attackers);
  });
});
