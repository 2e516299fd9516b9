/**
 * A tool result that closes a call its run holds undecided (its approval was being waited for
 * when the run was cancelled) is refused, `decided`, when the ledger holds a decision stored
 * meanwhile (another instance's, answered 200): its writer then announces that decision with
 * the result. Undecided, the call is closed; closed already, the result is `call_closed`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { abortedOutcome, toolResultMessage } from "../../src/agent/tool-results.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import { isConflict } from "../../src/store/errors.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

describe.each(STORE_BACKENDS)("on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}_${String(++counter).padStart(4, "0")}`;
  const at = () => new Date().toISOString();

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  /** A live run whose call `call` awaits approval. */
  async function awaiting(): Promise<{ sessionId: string; runId: string; callId: string }> {
    const sessionId = fresh("ses");
    const runId = fresh("run");
    const callId = fresh("call");
    await seedSession(store, { id: sessionId });
    await store.runs.create(runRecord({ id: runId, sessionId }), []);
    const assistant = {
      id: fresh("msg"),
      role: "assistant",
      content: "",
      toolCalls: [{ id: callId, name: "shell", input: '{"command":"ls"}' }],
      sessionId,
      runId,
      seq: 1,
      createdAt: at(),
    } as StoredMessage;
    await store.commitRun(
      runId,
      [
        { kind: "message", message: assistant },
        { kind: "toolCall.awaitingApproval", toolCallId: callId, reason: "shell asks", at: at() },
      ],
      [],
    );
    return { sessionId, runId, callId };
  }

  const aborted = (sessionId: string, runId: string, toolCallId: string, seq: number) =>
    ({
      ...toolResultMessage({ id: fresh("msg"), toolCallId, outcome: abortedOutcome() }),
      sessionId,
      runId,
      seq,
      createdAt: at(),
    }) as StoredMessage;

  it("a decision stored before the undecided close refuses it (decided), its batch whole; the call stays decided and open", async () => {
    const { sessionId, runId, callId } = await awaiting();
    await store.commitRequest(runId, [
      { kind: "toolCall.decided", toolCallId: callId, decision: "approve", reason: "fine", at: at() },
    ]);
    const close = { kind: "message", message: aborted(sessionId, runId, callId, 2), undecided: true } as const;
    await expect(store.commitRun(runId, [close], [])).rejects.toSatisfy((err) => isConflict(err, "decided"));
    expect(await store.toolCalls.get(runId, callId)).toMatchObject({ state: "approved", decision: "approve" });
    expect((await store.messages.history(sessionId)).filter((m) => m.role === "tool")).toEqual([]);
    // Written again as a close of the decided call, it closes it.
    await store.commitRun(runId, [{ ...close, undecided: false }], []);
    expect(await store.toolCalls.get(runId, callId)).toMatchObject({ state: "finished", decision: "approve" });
  });

  it("an undecided close of an undecided call closes it, and a decision after it is refused", async () => {
    const { sessionId, runId, callId } = await awaiting();
    const close = { kind: "message", message: aborted(sessionId, runId, callId, 2), undecided: true } as const;
    await store.commitRun(runId, [close], []);
    expect(await store.toolCalls.get(runId, callId)).toMatchObject({ state: "finished", decision: null });
    await expect(
      store.commitRequest(runId, [
        { kind: "toolCall.decided", toolCallId: callId, decision: "approve", reason: null, at: at() },
      ]),
    ).rejects.toSatisfy((err) => isConflict(err, "decided"));
    // A second undecided close of the closed call is no decision's: call_closed.
    const again = { ...close, message: aborted(sessionId, runId, callId, 3) };
    await expect(store.commitRun(runId, [again], [])).rejects.toSatisfy((err) => isConflict(err, "call_closed"));
  });
});
