/**
 * A tool result that closes a call `undecided` (its run was cancelled or ran out of time while
 * the call awaited approval) is refused `decided` only when the ledger holds a decision for the
 * call (RunChange "message"); a call that is not in the ledger at all is `call_closed` ("the tool
 * call has its result already, or is not in the ledger").
 *
 * SQLite refuses it `call_closed`. PostgreSQL refuses it `decided` ("was decided meanwhile"): its
 * lock statement `SELECT 1 ... AND decision IS NULL FOR UPDATE` (pg-changes.ts) finds no row for
 * a missing call and takes that for a decision.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

describe.each(STORE_BACKENDS)("an undecided close of a call the ledger does not hold, on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  it("is refused call_closed, as a plain close of it is", async () => {
    const sessionId = "ses_ucl_0001";
    const runId = "run_ucl_0001";
    await seedSession(store, { id: sessionId });
    await store.runs.create(runRecord({ id: runId, sessionId }), []);
    const close = (undecided: boolean, seq: number) =>
      store
        .commitRun(
          runId,
          [
            {
              kind: "message",
              undecided,
              message: {
                id: `msg_ucl_${seq}`,
                sessionId,
                runId,
                seq,
                role: "tool",
                toolCallId: "call_missing",
                content: "not run: the run was cancelled",
                isError: true,
                metadata: { errorCode: "CANCELLED", retryable: false, durationMs: 0, outputChars: 0, truncated: false },
                createdAt: new Date().toISOString(),
              },
            },
          ],
          [],
        )
        .then(
          () => null,
          (err: { rule?: string }) => err.rule ?? String(err),
        );
    expect(await close(false, 1)).toBe("call_closed");
    expect(await close(true, 2)).toBe("call_closed");
    expect(await store.messages.history(sessionId)).toEqual([]);
  });
});
