/**
 * README (Webhooks): while a receiver fails a key's deliveries, "that key's other deliveries to
 * it (the same URL) wait as the failed one does: it gets one try per step". worker.ts: the
 * others are put off "a millisecond more: at the step's end it is tried first again, so the
 * step grows with its failures instead of starting over with an untried delivery's".
 *
 * That holds for the backlog due when the try failed (postpone: at + 1), but not for a delivery
 * that arrives during the step: it is claimed, found cooling and released to exactly the failed
 * one's next try (`release({ at: wait })`, wait === at), a tie the claim breaks by the random
 * delivery id. A key that keeps producing events (new runs) then has an untried delivery tried
 * at the step's end about every time, its first failure restarting the backoff at
 * WEBHOOK_RETRY_BASE_MS: the receiver is tried at the base step forever instead of a growing one.
 *
 * The ids are made deterministic here (the failed delivery's id sorts last) so the tie always
 * goes the wrong way; with random ids it goes wrong with probability n/(n+1) for n arrivals.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import pino from "pino";
import { afterEach, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { WebhookAttempt, WebhookDelivery } from "../../src/store/store.js";
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

it("a delivery that arrives while its receiver cools does not take the failed delivery's turn at the step's end", async () => {
  const dir = tempDir("cooling-arrivals-");
  const path = join(dir.path, "agent.db");
  const store = openSqliteStore({ path });
  cleanups.push(
    () => dir.cleanup(),
    () => store.close(),
  );
  let made = 0;
  const newRun = async () => {
    const i = made++;
    const sessionId = `ses_arrive_${i}`;
    await seedSession(store, { id: sessionId, owner: "key_dead" });
    const runId = `run_arrive_${i}`;
    const started: RunEvent = { type: "run.started", runId, seq: 1, at: new Date().toISOString() };
    await store.runs.create(runRecord({ id: runId, sessionId, webhook: { url: DEAD, events: ["run.started"] } }), [
      started,
    ]);
  };
  await newRun();
  // The first delivery's id sorts after any generated one (msg_ and 32 hex digits).
  const FIRST = "msg_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz";
  const raw = new Database(path);
  raw.prepare("UPDATE webhook_deliveries SET id = ?").run(FIRST);
  raw.close();

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
    schedule: { baseMs: 300, maxMs: 5_000, windowMs: 3_600_000 },
    timeoutMs: 10_000,
    pollMs: 10,
    logger: pino({ level: "silent" }),
    maxPendingPerKey: 0,
  });
  worker.start();
  cleanups.push(() => worker.stop());

  await until(
    () => tries.length,
    (n) => n >= 1,
    "the first try",
  );
  expect(tries).toEqual([FIRST]);
  // The key goes on running: a new delivery to the same receiver every few tens of ms.
  let arriving = true;
  const arrivals = (async () => {
    while (arriving) {
      await newRun();
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  })();
  await until(
    () => tries.length,
    (n) => n >= 3,
    "two more tries",
  );
  arriving = false;
  await arrivals;
  await worker.stop();
  // The failed delivery is tried first at each step's end (its step growing 300, 600 ms...);
  // instead a delivery that arrived meanwhile, released to the very same time, took its turn.
  expect(tries.slice(0, 3)).toEqual([FIRST, FIRST, FIRST]);
});
