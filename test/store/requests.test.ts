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

  it("a decision stored as a request is taken once: a second one is refused (decided) and the first stands", async () => {
    const runId = await liveRun();
    const callAt = at();
    await store.commitRun(
      runId,
      [
        {
          kind: "message",
          message: {
            id: `msg_${runId}`,
            role: "assistant",
            content: "",
            toolCalls: [{ id: "call_1", name: "shell", input: '{"command":"ls"}' }],
            sessionId: `ses_${runId.slice(4)}`,
            runId,
            seq: 1,
            createdAt: callAt,
          },
        },
        { kind: "toolCall.awaitingApproval", toolCallId: "call_1", reason: "shell requires approval", at: callAt },
      ],
      [],
    );
    const decided = { kind: "toolCall.decided", toolCallId: "call_1", reason: null, at: at() } as const;
    await store.commitRequest(runId, [{ ...decided, decision: "deny" }]);
    const refused = await store.commitRequest(runId, [{ ...decided, decision: "approve" }]).catch((err) => err);
    expect(isConflict(refused, "decided")).toBe(true);
    expect(await store.toolCalls.get(runId, "call_1")).toMatchObject({ state: "denied", decision: "deny" });
  });
});
