/**
 * A queued run's cancel ends it with `{ kind: "finish", from: "queued", stopReason: "aborted" }`
 * (cancelQueuedRun). When the run has started meanwhile and another request has asked for its
 * cancel, that finish must be refused `run_not_live` (RunChange: "with `from`, when it is not in
 * that status (a queued run that started meanwhile)"), which finishRun answers by reading the run
 * as it is. An `aborted` end is never refused `cancel_requested`.
 *
 * PostgreSQL refuses it `run_not_live`; SQLite refuses it `cancel_requested` (runs.ts `finish`
 * falls back to `cancelledLive` whenever the UPDATE changed nothing), which finishRun rethrows.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import type { RunChange, Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

const starter = { owner: "inst_finish_from_queued", ttlMs: 60_000 };

describe.each(STORE_BACKENDS)("the end of a queued run that started and was asked to cancel, on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  it("an aborted finish `from: queued` is refused run_not_live and changes nothing", async () => {
    const sessionId = "ses_ffq_0001";
    const runId = "run_ffq_0001";
    await seedSession(store, { id: sessionId });
    await store.runs.create(runRecord({ id: runId, sessionId, status: "queued" }), [
      { type: "run.queued", runId, seq: 1, at: new Date().toISOString() },
    ]);
    // It starts meanwhile, and a second cancel request (seeing it live) asks for its cancel.
    expect((await store.runs.startQueued(sessionId, new Date().toISOString(), starter))?.run.id).toBe(runId);
    await store.commitRequest(runId, [{ kind: "cancelRequested", at: new Date().toISOString() }]);

    const finish: RunChange = {
      kind: "finish",
      from: "queued",
      stopReason: "aborted",
      stopDetail: "cancelled while queued",
      error: null,
      stats: emptyStats(),
      finishedAt: new Date().toISOString(),
    };
    const refusal = await store.commitRun(runId, [finish], []).then(
      () => null,
      (err: { rule?: string }) => err.rule ?? String(err),
    );
    expect(refusal).toBe("run_not_live");
    expect((await store.runs.get(runId))?.status).toBe("cancelling");
  });
});
