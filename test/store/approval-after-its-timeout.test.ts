/**
 * The ledger refuses an approval later than APPROVAL_TIMEOUT_MS after the call's stored request
 * (`approval_expired`), whoever writes it (the run's own write, or a request stored for a run
 * another instance or a restart takes up): the call is the timeout's to deny (fail closed).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isConflict } from "../../src/store/errors.js";
import type { RunChange, Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

const TIMEOUT_MS = 60_000;
const ASKED_AT = "2030-01-01T00:00:00.000Z";
/** `ms` after the request. */
const sinceAsked = (ms: number) => new Date(Date.parse(ASKED_AT) + ms).toISOString();

describe.each(STORE_BACKENDS)("an approval after its timeout on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  /** A run whose one call (call_1) was asked for approval at ASKED_AT. */
  async function awaitingRun(): Promise<string> {
    const n = ++counter;
    const runId = `run_t${n}`;
    await seedSession(store, { id: `ses_t${n}` });
    await store.runs.create(runRecord({ id: runId, sessionId: `ses_t${n}` }), [
      { type: "run.started", runId, seq: 1, at: ASKED_AT },
    ]);
    const message = {
      id: `msg_${runId}`,
      role: "assistant" as const,
      content: "",
      toolCalls: [{ id: "call_1", name: "write_file", input: "{}" }],
      sessionId: `ses_t${n}`,
      runId,
      seq: 1,
      createdAt: ASKED_AT,
    };
    await store.commitRun(
      runId,
      [
        { kind: "message", message },
        { kind: "toolCall.awaitingApproval", toolCallId: "call_1", reason: "asks", at: ASKED_AT },
      ],
      [],
    );
    return runId;
  }

  const decided = (decision: "approve" | "deny", at: string): RunChange => ({
    kind: "toolCall.decided",
    toolCallId: "call_1",
    decision,
    reason: null,
    at,
    approvalTimeoutMs: TIMEOUT_MS,
  });

  it("an approval later than the timeout is refused (approval_expired), stored as a request or by the run; nothing is written", async () => {
    const runId = await awaitingRun();
    const late = decided("approve", sinceAsked(TIMEOUT_MS + 1));
    const asRequest = await store.commitRequest(runId, [late]).catch((err) => err);
    const byRun = await store.commitRun(runId, [late], []).catch((err) => err);
    expect([isConflict(asRequest, "approval_expired"), isConflict(byRun, "approval_expired")]).toEqual([true, true]);
    expect(await store.toolCalls.status(runId, "call_1")).toMatchObject({
      state: "awaiting_approval",
      decision: null,
    });
  });

  it("an approval at the deadline is taken", async () => {
    const runId = await awaitingRun();
    await store.commitRequest(runId, [decided("approve", sinceAsked(TIMEOUT_MS))]);
    expect(await store.toolCalls.status(runId, "call_1")).toMatchObject({ state: "approved", decision: "approve" });
  });

  it("a denial after the deadline is taken: it is what the timeout decides", async () => {
    const runId = await awaitingRun();
    await store.commitRequest(runId, [decided("deny", sinceAsked(TIMEOUT_MS + 1))]);
    expect(await store.toolCalls.status(runId, "call_1")).toMatchObject({ state: "denied", decision: "deny" });
  });

  it("a late approval of a call already denied is refused as decided, the denial standing", async () => {
    const runId = await awaitingRun();
    await store.commitRequest(runId, [decided("deny", sinceAsked(TIMEOUT_MS + 1))]);
    const refused = await store
      .commitRequest(runId, [decided("approve", sinceAsked(TIMEOUT_MS + 2))])
      .catch((err) => err);
    expect(isConflict(refused, "decided")).toBe(true);
    expect((await store.toolCalls.status(runId, "call_1"))?.decision).toBe("deny");
  });
});
