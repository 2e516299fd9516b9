/** finishWithRetry and a run this process stops executing while storage fails: it leaves the run as it is. */
import pino from "pino";
import { afterEach, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { finishWithRetry } from "../../src/runs/finish-retry.js";
import { LiveRun } from "../../src/runs/live-run.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { StorageError } from "../../src/store/errors.js";
import { faultySqlite } from "../helpers/faulty-sqlite.js";
import { runRecord, seedSession } from "../helpers/seed.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

it("a run stopped (its lease lost) while its failing end is retried is given up, not retried for ever", async () => {
  const { sqlite: store } = faultySqlite("review-stopped-", cleanups);
  const session = await seedSession(store, { id: "ses_1" });
  const record = runRecord({ id: "run_1", sessionId: "ses_1" });
  await store.runs.create(record, [{ type: "run.started", runId: "run_1", seq: 1, at: new Date().toISOString() }]);
  const recorder = await RunRecorder.open({ store, hub: new EventHub(), runId: "run_1", sessionId: "ses_1" });
  const live = new LiveRun(record, session, recorder);
  let writes = 0;
  const commitRun = store.commitRun.bind(store);
  store.commitRun = async (...args) => {
    writes++;
    // First try: storage fails (the end gets reported); second: the lease is lost meanwhile.
    if (writes === 2) live.stop("lease lost");
    if (writes <= 2) throw new StorageError("io", "disk on fire");
    return commitRun(...args);
  };
  const end = { stopReason: "complete" as const, stopDetail: null, error: null, stats: emptyStats() };
  const finished = finishWithRetry({
    deps: { store, finishReportMs: 0, accepting: () => true, logger: pino({ level: "silent" }) },
    live,
    end,
    outcomeFor: () => ({ status: "error", content: "x" }) as never,
  });
  const outcome = await Promise.race([
    finished.then((v) => v.status),
    new Promise((r) => setTimeout(() => r("still retrying"), 4000)),
  ]);
  expect(outcome).not.toBe("still retrying");
  expect(live.stopped).toBe(true);
}, 10_000);
