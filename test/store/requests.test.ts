import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isConflict } from "../../src/store/errors.js";
import type { Store } from "../../src/store/store.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** Requests for a run stored by any instance (cancel, decisions): the same on every backend. */
describe.each(STORE_BACKENDS)("stored run requests on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;
  const at = () => new Date().toISOString();

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  async function liveRun(): Promise<string> {
    const n = ++counter;
    await seedSession(store, { id: `ses_r${n}` });
    await store.runs.create(runRecord({ id: `run_r${n}`, sessionId: `ses_r${n}` }), [
      { type: "run.started", runId: `run_r${n}`, seq: 1, at: at() },
    ]);
    return `run_r${n}`;
  }

  it("a cancel request marks an unfinished run cancelling for good; its first time is kept; a finished run is not marked", async () => {
    const [asked, other, done] = [await liveRun(), await liveRun(), await liveRun()];
    expect(await store.runs.cancelRequested([asked, other, done])).toEqual([]);
    await store.commitRequest(asked, [{ kind: "cancelRequested", at: at() }]);
    await store.commitRequest(asked, [{ kind: "cancelRequested", at: at() }]);
    expect(await store.runs.cancelRequested([asked, other, done])).toEqual([asked]);
    expect((await store.runs.get(asked))?.status).toBe("cancelling");
    // The run's own writes cannot take the status back once a cancel was asked for.
    await store.commitRun(asked, [{ kind: "status", status: "running" }], []);
    expect((await store.runs.get(asked))?.status).toBe("cancelling");
    await store.commitRun(other, [{ kind: "status", status: "awaiting_approval" }], []);
    expect((await store.runs.get(other))?.status).toBe("awaiting_approval");

    const finish = finishChange("aborted");
    await store.commitRun(done, [finish], []);
    await store.commitRequest(done, [{ kind: "cancelRequested", at: at() }]);
    expect((await store.runs.get(done))?.status).toBe("finished");
    await store.commitRun(asked, [finish], []);
    expect(await store.runs.cancelRequested([asked, other, done])).toEqual([]);
  });

  it("a cancel request keeps who asked, the first request's (none said: null), for the instance that ends the run", async () => {
    const [said, unsaid] = [await liveRun(), await liveRun()];
    await store.commitRequest(said, [{ kind: "cancelRequested", at: at(), by: "because its session was deleted" }]);
    await store.commitRequest(said, [{ kind: "cancelRequested", at: at(), by: "by a DELETE /runs/{id} request" }]);
    await store.commitRequest(unsaid, [{ kind: "cancelRequested", at: at() }]);
    await store.commitRequest(unsaid, [{ kind: "cancelRequested", at: at(), by: "by a DELETE /runs/{id} request" }]);
    expect((await store.runs.access(said))?.cancelledBy).toBe("because its session was deleted");
    expect((await store.runs.access(unsaid))?.cancelledBy).toBeNull();
    await store.commitRun(said, [finishChange("aborted")], []);
    expect((await store.runs.access(said))?.cancelledBy).toBe("because its session was deleted");
  });

  /** A run whose one call (call_1) awaits approval. */
  async function awaitingRun(): Promise<string> {
    const runId = await liveRun();
    const callAt = at();
    const message = {
      id: `msg_${runId}`,
      role: "assistant" as const,
      content: "",
      toolCalls: [{ id: "call_1", name: "shell", input: '{"command":"ls"}' }],
      sessionId: `ses_${runId.slice(4)}`,
      runId,
      seq: 1,
      createdAt: callAt,
    };
    await store.commitRun(
      runId,
      [
        { kind: "message", message },
        { kind: "toolCall.awaitingApproval", toolCallId: "call_1", reason: "shell requires approval", at: callAt },
      ],
      [
        {
          type: "approval.requested",
          runId,
          seq: 2,
          at: callAt,
          toolCallId: "call_1",
          tool: "shell",
          input: {},
          reason: "r",
        },
      ],
    );
    return runId;
  }

  it("a decision stored as a request is taken once: a second one is refused (decided) and the first stands", async () => {
    const runId = await awaitingRun();
    const decided = { kind: "toolCall.decided", toolCallId: "call_1", reason: null, at: at() } as const;
    await store.commitRequest(runId, [{ ...decided, decision: "deny" }]);
    const refused = await store.commitRequest(runId, [{ ...decided, decision: "approve" }]).catch((err) => err);
    expect(isConflict(refused, "decided")).toBe(true);
    expect(await store.toolCalls.get(runId, "call_1")).toMatchObject({ state: "denied", decision: "deny" });
  });

  it("once a run's cancel is requested, a decision is refused (decided) and an end but aborted (cancel_requested)", async () => {
    const runId = await awaitingRun();
    await store.commitRequest(runId, [{ kind: "cancelRequested", at: at() }]);
    const decided = {
      kind: "toolCall.decided",
      toolCallId: "call_1",
      decision: "approve",
      reason: null,
      at: at(),
    } as const;
    expect(isConflict(await store.commitRequest(runId, [decided]).catch((err) => err), "decided")).toBe(true);
    expect(isConflict(await store.commitRun(runId, [decided], []).catch((err) => err), "decided")).toBe(true);
    expect((await store.toolCalls.get(runId, "call_1"))?.decision).toBeNull();
    for (const stopReason of ["complete", "error", "max_turns"] as const) {
      const refused = await store.commitRun(runId, [finishChange(stopReason)], []).catch((err) => err);
      expect(isConflict(refused, "cancel_requested")).toBe(true);
    }
    expect((await store.runs.get(runId))?.status).toBe("cancelling");
    await store.commitRun(runId, [finishChange("aborted")], []);
    expect(await store.runs.get(runId)).toMatchObject({ status: "finished", stopReason: "aborted" });
    // Finished: what follows is refused as for any finished run.
    const late = await store.commitRun(runId, [finishChange("complete")], []).catch((err) => err);
    expect(isConflict(late, "run_not_live")).toBe(true);
  });

  it("a run's events of one type, in order", async () => {
    const runId = await awaitingRun();
    const resolved = (seq: number, toolCallId: string) =>
      ({ type: "approval.resolved", runId, seq, at: at(), toolCallId, decision: "approve", reason: null }) as const;
    await store.commitRun(
      runId,
      [],
      [resolved(3, "call_1"), { type: "turn.started", runId, seq: 4, at: at(), turn: 2 }],
    );
    await store.commitRun(runId, [], [resolved(5, "call_2")]);
    const found = await store.events.ofType(runId, "approval.resolved");
    expect(found.map((e) => [e.seq, JSON.parse(e.data).toolCallId])).toEqual([
      [3, "call_1"],
      [5, "call_2"],
    ]);
    expect(await store.events.ofType(runId, "run.finished")).toEqual([]);
  });
});
