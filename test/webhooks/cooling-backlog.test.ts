/**
 * While a receiver fails a key's deliveries, the key's other deliveries to it wait as the failed
 * one does (README, Webhooks). They used to wait by being claimed one at a time, found cooling
 * and given back (a lease write and a release write each), all due again together when the step
 * ended: so every backoff step re-claimed and gave back the key's whole backlog for one try (at
 * the pending cap, ~20,000 writes a step, all day). Now a failed try puts off the key's due
 * deliveries to that receiver in one write, a millisecond past the failed one's next try: the
 * failed one is tried first again (ties used to go to a random untried delivery, whose first
 * failure started the backoff over at its first step).
 */
import { join } from "node:path";
import pino from "pino";
import { afterEach, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store, WebhookAttempt, WebhookDelivery } from "../../src/store/store.js";
import type { WebhookSender } from "../../src/webhooks/send.js";
import { WebhookWorker } from "../../src/webhooks/worker.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

const DEAD = "https://dead.example.com/in";
let cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

it("a key's backlog to a failing receiver is not re-claimed and given back whole at every backoff step", async () => {
  const dir = tempDir("cooling-churn-");
  const opened = openSqliteStore({ path: join(dir.path, "agent.db") });
  cleanups.push(
    () => dir.cleanup(),
    () => opened.close(),
  );
  const backlog = 60;
  for (let i = 0; i < backlog; i++) {
    const sessionId = `ses_churn_${i}`;
    await seedSession(opened, { id: sessionId, owner: "key_dead" });
    const runId = `run_churn_${i}`;
    const started: RunEvent = { type: "run.started", runId, seq: 1, at: new Date().toISOString() };
    await opened.runs.create(runRecord({ id: runId, sessionId, webhook: { url: DEAD, events: ["run.started"] } }), [
      started,
    ]);
  }
  // The store as the worker sees it, counting the deliveries it gives back untried.
  let releases = 0;
  const store: Store = {
    ...opened,
    webhooks: {
      ...opened.webhooks,
      release: (query) => {
        releases++;
        return opened.webhooks.release(query);
      },
    },
  };
  const tries: string[] = [];
  const sender = {
    async send(delivery: WebhookDelivery): Promise<WebhookAttempt & { retryAfterMs: null }> {
      tries.push(delivery.id);
      return { at: new Date().toISOString(), statusCode: 503, error: null, retryAfterMs: null };
    },
    cut() {},
    close: async () => {},
  };
  const worker = new WebhookWorker({
    store,
    sender: sender as unknown as WebhookSender,
    // A fixed step long enough for any number of claims between two tries.
    schedule: { baseMs: 400, maxMs: 400, windowMs: 3_600_000 },
    timeoutMs: 10_000,
    pollMs: 10,
    logger: pino({ level: "silent" }),
    maxPendingPerKey: 0,
  });
  worker.start();
  cleanups.push(() => worker.stop());

  const steps = 4;
  await until(
    () => tries.length,
    (n) => n >= steps + 1,
    "the receiver to have had a few tries",
  );
  await worker.stop();
  // One try per step, as documented...
  expect(tries.length).toBeLessThanOrEqual(steps + 2);
  // ...always of the same delivery: the one that failed is tried first at the step's end, so its
  // step grows with its failures (an untried one, tried instead, would start the backoff over).
  expect(new Set(tries).size).toBe(1);
  // ...but each step claimed and gave back every other delivery of the backlog again.
  expect(releases).toBeLessThan(backlog);
});
