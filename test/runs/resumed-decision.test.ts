/**
 * A resumed run's approval gate and a decision already in the ledger: reused, never asked
 * again, and announced once: `approval.resolved` is written (with the run running again) for a
 * decision another instance stored while no process executed the run, and not again for one
 * the run's earlier owner had announced itself.
 */
import { afterEach, expect, it } from "vitest";
import { z } from "zod";
import type { AgentTool } from "../../src/agent/tool.js";
import { toolOk } from "../../src/agent/tool.js";
import { approvalGate } from "../../src/runs/approvals.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { LiveRun } from "../../src/runs/live-run.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { faultySqlite } from "../helpers/faulty-sqlite.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { until } from "../helpers/until.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const shell: AgentTool<{ command: string }> = {
  name: "shell",
  description: "runs a command",
  inputSchema: z.object({ command: z.string() }),
  readOnly: false,
  execute: async () => toolOk("ran"),
};
const at = () => new Date().toISOString();

/** A run left awaiting approval of call_1, decided in the ledger; `announced`: its approval.resolved stored too. */
/** run_1 with its assistant message proposing call_1 (a shell command) committed, and the run's recorder. */
async function runWithCall(prefix: string) {
  const { sqlite: store } = faultySqlite(prefix, cleanups);
  const session = await seedSession(store, { id: "ses_1" });
  const record = runRecord({ id: "run_1", sessionId: "ses_1" });
  await store.runs.create(record, [{ type: "run.started", runId: "run_1", seq: 1, at: at() }]);
  const call = { id: "call_1", name: "shell", input: '{"command":"ls"}' };
  const message = { id: "msg_1", role: "assistant" as const, content: "", toolCalls: [call] };
  const stored = { ...message, sessionId: "ses_1", runId: "run_1", seq: 1, createdAt: at() };
  await store.commitRun("run_1", [{ kind: "message", message: stored }], []);
  return { store, session, record, call };
}

async function decidedRun(announced: boolean, cancelDuringRead = false) {
  const { store, session, record, call } = await runWithCall("resumed-decision-");
  await store.commitRun(
    "run_1",
    [
      { kind: "toolCall.awaitingApproval", toolCallId: "call_1", reason: "shell requires approval", at: at() },
      { kind: "status", status: "awaiting_approval" },
    ],
    [
      {
        type: "approval.requested",
        runId: "run_1",
        seq: 2,
        at: at(),
        toolCallId: "call_1",
        tool: "shell",
        input: {},
        reason: "r",
      },
    ],
  );
  const decided = {
    kind: "toolCall.decided",
    toolCallId: "call_1",
    decision: "approve",
    reason: "go",
    at: at(),
  } as const;
  if (announced) {
    const event = {
      type: "approval.resolved",
      runId: "run_1",
      seq: 3,
      at: at(),
      toolCallId: "call_1",
      decision: "approve",
      reason: "go",
    } as const;
    await store.commitRun("run_1", [decided, { kind: "status", status: "running" }], [event]);
  } else await store.commitRequest("run_1", [decided]);
  const recorder = await RunRecorder.open({ store, hub: new EventHub(), runId: "run_1", sessionId: "ses_1" });
  cleanups.push(() => recorder.dispose());
  const live = new LiveRun(record, session, recorder);
  live.resumed = true;
  if (cancelDuringRead) {
    // A DELETE for the run executing here, as cancelRun does it, while the gate reads its events.
    const ofType = store.events.ofType.bind(store.events);
    store.events.ofType = async (runId, type) => {
      store.events.ofType = ofType;
      live.cancel("by a DELETE /runs/{id} request");
      await live.recorder.write(() => ({ changes: [{ kind: "status", status: "cancelling" }], events: [] }));
      return ofType(runId, type);
    };
  }
  const gate = approvalGate({ store, approvalTimeoutMs: 60_000 }, live);
  const decision = await gate({
    toolCall: call,
    tool: shell,
    input: { command: "ls" },
    signal: new AbortController().signal,
  });
  const resolved = (await store.events.ofType("run_1", "approval.resolved")).map((e) => JSON.parse(e.data));
  return { decision, resolved, status: (await store.runs.get("run_1"))?.status };
}

it("a decision stored while no process executed the run is announced once, and the run is running again", async () => {
  const { decision, resolved, status } = await decidedRun(false);
  expect(decision).toEqual({ decision: "approve", reason: "go" });
  expect(resolved).toEqual([
    expect.objectContaining({ toolCallId: "call_1", decision: "approve", reason: "go", seq: 3 }),
  ]);
  expect(status).toBe("running");
});

it("a decision the run's earlier owner announced is not announced again", async () => {
  const { decision, resolved, status } = await decidedRun(true);
  expect(decision).toEqual({ decision: "approve", reason: "go" });
  expect(resolved.map((e) => e.seq)).toEqual([3]);
  expect(status).toBe("running");
});

it("a DELETE while the decision is announced leaves the run cancelling, and nothing of the call is announced after it", async () => {
  const { resolved, status } = await decidedRun(false, true);
  // The loop closes the call once cancelled: an announcement could follow its result, or the run's end.
  expect(resolved).toHaveLength(0);
  expect(status).toBe("cancelling");
});

it("an approval timing out on a run whose cancel another instance stored cancels the run instead of denying", async () => {
  const { store, session, record, call } = await runWithCall("timeout-cancelled-");
  const recorder = await RunRecorder.open({ store, hub: new EventHub(), runId: "run_1", sessionId: "ses_1" });
  cleanups.push(() => recorder.dispose());
  const live = new LiveRun(record, session, recorder);
  const gate = approvalGate({ store, approvalTimeoutMs: 200 }, live);
  let settled: unknown = "pending";
  void gate({ toolCall: call, tool: shell, input: { command: "ls" }, signal: new AbortController().signal }).then(
    (decision) => {
      settled = decision;
    },
  );
  await until(
    async () => (await store.toolCalls.get("run_1", "call_1"))?.state,
    (state) => state === "awaiting_approval",
    "the approval request",
  );
  // Another instance takes a DELETE: the request is stored, this instance has not heard of it yet.
  await store.commitRequest("run_1", [{ kind: "cancelRequested", at: at() }]);
  await until(
    async () => live.phase.name,
    (phase) => phase === "cancelling",
    "the run cancelled at the timeout",
  );
  expect(live.controller.signal.aborted).toBe(true);
  expect(settled).not.toMatchObject({ decision: "deny" });
  expect((await store.toolCalls.get("run_1", "call_1"))?.decision).toBeNull();
});
