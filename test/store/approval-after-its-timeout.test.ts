/**
 * The ledger refuses an approval later than APPROVAL_TIMEOUT_MS after the call's stored request
 * (`approval_expired`), whoever writes it (the run's own write, or a request stored for a run
 * another instance or a restart takes up): the call is the timeout's to deny (fail closed).
 * Lateness is judged on the store's clock (PostgreSQL stamps the request and the decision with
 * its own), so the times here are real: a short timeout, and the time it takes passing.
 */
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isConflict } from "../../src/store/errors.js";
import type { RunChange, Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** A timeout that has passed once PASSED_MS went by, and one that has not. */
const SHORT_MS = 20;
const PASSED_MS = 80;
const LONG_MS = 60_000;
const nowIso = () => new Date().toISOString();

describe.each(STORE_BACKENDS)("an approval after its timeout on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  /** A run whose one call (call_1) was asked for approval now. */
  async function awaitingRun(): Promise<string> {
    const askedAt = nowIso();
    const n = ++counter;
    const runId = `run_t${n}`;
    await seedSession(store, { id: `ses_t${n}` });
    await store.runs.create(runRecord({ id: runId, sessionId: `ses_t${n}` }), [
      { type: "run.started", runId, seq: 1, at: askedAt },
    ]);
    const message = {
      id: `msg_${runId}`,
      role: "assistant" as const,
      content: "",
      toolCalls: [{ id: "call_1", name: "write_file", input: "{}" }],
      sessionId: `ses_t${n}`,
      runId,
      seq: 1,
      createdAt: askedAt,
    };
    await store.commitRun(
      runId,
      [
        { kind: "message", message },
        { kind: "toolCall.awaitingApproval", toolCallId: "call_1", reason: "asks", at: askedAt },
      ],
      [],
    );
    return runId;
  }

  /** A decision taken now, under APPROVAL_TIMEOUT_MS `timeoutMs`. */
  const decided = (decision: "approve" | "deny", timeoutMs: number): RunChange => ({
    kind: "toolCall.decided",
    toolCallId: "call_1",
    decision,
    reason: null,
    at: nowIso(),
    approvalTimeoutMs: timeoutMs,
  });

  it("an approval later than the timeout is refused (approval_expired), stored as a request or by the run; nothing is written", async () => {
    const runId = await awaitingRun();
    await delay(PASSED_MS);
    const late = decided("approve", SHORT_MS);
    const asRequest = await store.commitRequest(runId, [late]).catch((err) => err);
    const byRun = await store.commitRun(runId, [late], []).catch((err) => err);
    expect([isConflict(asRequest, "approval_expired"), isConflict(byRun, "approval_expired")]).toEqual([true, true]);
    expect(await store.toolCalls.status(runId, "call_1")).toMatchObject({
      state: "awaiting_approval",
      decision: null,
    });
  });

  it("an approval within the timeout is taken", async () => {
    const runId = await awaitingRun();
    await store.commitRequest(runId, [decided("approve", LONG_MS)]);
    expect(await store.toolCalls.status(runId, "call_1")).toMatchObject({ state: "approved", decision: "approve" });
  });

  it("a denial after the deadline is taken: it is what the timeout decides", async () => {
    const runId = await awaitingRun();
    await delay(PASSED_MS);
    await store.commitRequest(runId, [decided("deny", SHORT_MS)]);
    expect(await store.toolCalls.status(runId, "call_1")).toMatchObject({ state: "denied", decision: "deny" });
  });

  it("a late approval of a call already denied is refused as decided, the denial standing", async () => {
    const runId = await awaitingRun();
    await delay(PASSED_MS);
    await store.commitRequest(runId, [decided("deny", SHORT_MS)]);
    const refused = await store.commitRequest(runId, [decided("approve", SHORT_MS)]).catch((err) => err);
    expect(isConflict(refused, "decided")).toBe(true);
    expect((await store.toolCalls.status(runId, "call_1"))?.decision).toBe("deny");
  });
});
