import { describe, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import type { RunView } from "../../src/domain/run.js";
import type { RunEvent } from "../../src/domain/run-events.js";
import type { CommittedBatch } from "../../src/observability/observer.js";
import { RunDigest, type RunFacts, type ToolResultFact } from "../../src/observability/run-digest.js";
import type { RunRecord } from "../../src/store/runs.js";

const batch = (events: readonly unknown[]): CommittedBatch => ({
  runId: "run_a",
  operation: "commit_run",
  changes: [],
  events: events as RunEvent[],
  outcome: "ok",
  seconds: 0,
});
const at = new Date(0).toISOString();

describe("the run digest's sinks", () => {
  it("a sink that throws loses its own facts only: the others get every fact, and the run's record is dropped at its end", () => {
    const told: string[] = [];
    const broken: RunFacts = {
      runStarted: () => {
        throw new Error("broken sink");
      },
      runFinished: () => {
        throw new Error("broken sink");
      },
    };
    const counting: RunFacts = {
      runStarted: () => told.push("runStarted"),
      runFinished: () => told.push("runFinished"),
    };
    const reported: string[] = [];
    const digest = new RunDigest([broken, counting], (err, kind) =>
      reported.push(`${kind}: ${(err as Error).message}`),
    );
    digest.committed(batch([{ type: "run.started", runId: "run_a", seq: 1, at }]));
    expect(digest.runsKept).toBe(1);
    const run = { id: "run_a", status: "finished", stopReason: "cancelled", error: null } as unknown as RunView;
    digest.committed(batch([{ type: "run.finished", runId: "run_a", seq: 2, at, run }]));
    expect(told).toEqual(["runStarted", "runFinished"]);
    expect(digest.runsKept).toBe(0);
    // Each kind of failure is reported once, however often it recurs.
    digest.committed(batch([{ type: "run.started", runId: "run_b", seq: 1, at }]));
    expect(reported).toEqual(["runStarted: broken sink", "runFinished: broken sink"]);
  });

  it("a run given up here tells it left and is dropped; one that ended here tells nothing more", () => {
    const told: string[] = [];
    const digest = new RunDigest([
      {
        runLeft: ({ runId }) => told.push(`runLeft ${runId}`),
        runFinished: ({ run }) => told.push(`runFinished ${run.id}`),
      },
    ]);
    digest.committed(batch([{ type: "run.started", runId: "run_a", seq: 1, at }]));
    digest.committed(
      batch([{ type: "approval.requested", runId: "run_a", seq: 2, at, toolCallId: "call_1", tool: "shell" }]),
    );
    expect(digest.runsKept).toBe(1);
    digest.left({ runId: "run_a" });
    digest.left({ runId: "run_a" });
    expect(told).toEqual(["runLeft run_a"]);
    expect(digest.runsKept).toBe(0);

    told.length = 0;
    const run = { id: "run_b", status: "finished", stopReason: "complete", error: null } as unknown as RunView;
    digest.committed({ ...batch([{ type: "run.started", runId: "run_b", seq: 1, at }]), runId: "run_b" });
    digest.committed({ ...batch([{ type: "run.finished", runId: "run_b", seq: 2, at, run }]), runId: "run_b" });
    digest.left({ runId: "run_b" });
    expect(told).toEqual(["runFinished run_b"]);
    expect(digest.runsKept).toBe(0);
  });

  it("a run stored queued is kept track of from its start: one started by another instance leaves nothing here", () => {
    const digest = new RunDigest([]);
    const queued = { id: "run_q", sessionId: "ses_1", status: "queued" } as RunRecord;
    digest.committed({
      ...batch([{ type: "run.queued", runId: "run_q", seq: 1, at }]),
      runId: "run_q",
      operation: "create_run",
      run: queued,
    });
    expect(digest.runsKept).toBe(0);
    // Started here: kept from its start, with its session.
    const started: string[] = [];
    const watching = new RunDigest([{ runStarted: ({ sessionId }) => started.push(String(sessionId)) }]);
    watching.committed({
      ...batch([{ type: "run.started", runId: "run_q", seq: 2, at }]),
      runId: "run_q",
      run: { ...queued, status: "running" },
    });
    expect(started).toEqual(["ses_1"]);
    expect(watching.runsKept).toBe(1);
  });

  it("a queued run cancelled before it started is told to no sink: it is neither started nor finished", () => {
    const told: string[] = [];
    const digest = new RunDigest([
      { runStarted: () => told.push("runStarted"), runFinished: () => told.push("runFinished") },
    ]);
    const run = { id: "run_q", status: "finished", stopReason: "aborted", error: null } as unknown as RunView;
    digest.committed({
      ...batch([{ type: "run.finished", runId: "run_q", seq: 2, at, run }]),
      runId: "run_q",
      changes: [
        {
          kind: "finish",
          from: "queued",
          stopReason: "aborted",
          stopDetail: null,
          error: null,
          stats: emptyStats(),
          finishedAt: at,
        },
      ],
    });
    expect(told).toEqual([]);
    expect(digest.runsKept).toBe(0);
  });

  it("a tool result is told under the tool its write names, though its call was proposed elsewhere", () => {
    const results: string[] = [];
    const digest = new RunDigest([{ toolResult: ({ tool, outcome }) => results.push(`${tool} ${outcome}`) }]);
    const result = (toolCallId: string, errorCode: string) =>
      ({
        id: `msg_${toolCallId}`,
        role: "tool",
        toolCallId,
        content: "x",
        isError: true,
        metadata: { errorCode, retryable: false, durationMs: 0, outputChars: 1, truncated: false },
        sessionId: "ses_1",
        runId: "run_a",
        seq: 3,
        createdAt: at,
      }) as const;
    const interrupted = result("call_1", "INTERRUPTED");
    const denied = result("call_2", "DENIED");
    // A run resumed here: neither the calls' proposal nor their approval request was seen.
    digest.committed({
      ...batch([
        { type: "message", runId: "run_a", seq: 4, at, message: interrupted },
        { type: "message", runId: "run_a", seq: 5, at, message: denied },
      ]),
      changes: [
        { kind: "message", message: interrupted, tool: "shell" },
        { kind: "message", message: denied, tool: "write_file" },
      ],
    });
    expect(results).toEqual(["shell INTERRUPTED", "write_file DENIED"]);
  });

  it("a call whose start was committed is a tool execution unless its result says its tool did not run", () => {
    const facts: ToolResultFact[] = [];
    const digest = new RunDigest([{ toolResult: (fact) => facts.push(fact) }]);
    const startedAt = new Date(1_000).toISOString();
    const resultAt = new Date(5_000).toISOString();
    const result = (toolCallId: string, errorCode: string | null) =>
      ({
        id: `msg_${toolCallId}`,
        role: "tool",
        toolCallId,
        content: "x",
        isError: errorCode !== null,
        metadata: { errorCode, retryable: false, durationMs: errorCode ? 0 : 40, outputChars: 1, truncated: false },
        sessionId: "ses_1",
        runId: "run_a",
        seq: 3,
        createdAt: resultAt,
      }) as const;
    const call = (toolCallId: string, errorCode: string | null, ran: boolean) => {
      const message = result(toolCallId, errorCode);
      digest.committed(batch([{ type: "tool.started", runId: "run_a", seq: 1, at: startedAt, toolCallId }]));
      digest.committed({
        ...batch([{ type: "message", runId: "run_a", seq: 2, at: resultAt, message }]),
        changes: [{ kind: "message", message, tool: "list_files", ran }],
      });
    };
    call("call_ran", null, true);
    // Cancelled while its start was written: closed ABORTED without running.
    call("call_unrun", "ABORTED", false);
    expect(
      facts.map(({ toolCallId, executed, startedAt, durationMs }) => ({ toolCallId, executed, startedAt, durationMs })),
    ).toEqual([
      { toolCallId: "call_ran", executed: true, startedAt: 1_000, durationMs: 40 },
      { toolCallId: "call_unrun", executed: false, startedAt: 5_000, durationMs: 0 },
    ]);
  });

  it("a write that was not stored is told as committed only: nothing of it is digested", () => {
    const told: string[] = [];
    const digest = new RunDigest([
      {
        committed: ({ runId, outcome }) => told.push(`committed ${runId} ${outcome}`),
        runStarted: ({ runId }) => told.push(`runStarted ${runId}`),
      },
    ]);
    // A queued run's start that failed names no run; a refused write of a run tells nothing of it either.
    digest.committed({ ...batch([]), runId: null, outcome: "error" });
    digest.committed({ ...batch([{ type: "run.started", runId: "run_a", seq: 1, at }]), outcome: "conflict" });
    expect(told).toEqual(["committed null error", "committed run_a conflict"]);
    expect(digest.runsKept).toBe(0);
  });
});
