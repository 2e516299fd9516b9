import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/domain/run.js";
import type { RunEvent } from "../../src/domain/run-events.js";
import type { CommittedBatch } from "../../src/observability/observer.js";
import { RunDigest, type RunFacts } from "../../src/observability/run-digest.js";

const batch = (events: readonly unknown[]): CommittedBatch => ({
  runId: "run_a",
  operation: "commit_run",
  changes: [],
  events: events as RunEvent[],
  ok: true,
  seconds: 0,
});
const at = new Date(0).toISOString();

describe("the run digest's sinks", () => {
  it("a sink that throws loses its own facts only: the others get every fact, and the run's approvals settle", () => {
    const told: string[] = [];
    const broken: RunFacts = {
      runStarted: () => {
        throw new Error("broken sink");
      },
      approvalRequested: () => {
        throw new Error("broken sink");
      },
    };
    const counting: RunFacts = {
      runStarted: () => told.push("runStarted"),
      approvalRequested: () => told.push("approvalRequested"),
      approvalSettled: () => told.push("approvalSettled"),
      runFinished: () => told.push("runFinished"),
    };
    const reported: string[] = [];
    const digest = new RunDigest([broken, counting], (err, kind) =>
      reported.push(`${kind}: ${(err as Error).message}`),
    );
    digest.committed(batch([{ type: "run.started", runId: "run_a", seq: 1, at }]));
    digest.committed(
      batch([{ type: "approval.requested", runId: "run_a", seq: 2, at, toolCallId: "call_1", tool: "shell" }]),
    );
    const run = { id: "run_a", status: "finished", stopReason: "cancelled", error: null } as unknown as RunView;
    digest.committed(batch([{ type: "run.finished", runId: "run_a", seq: 3, at, run }]));
    expect(told).toEqual(["runStarted", "approvalRequested", "approvalSettled", "runFinished"]);
    // Each kind of failure is reported once, however often it recurs.
    digest.committed(batch([{ type: "run.started", runId: "run_b", seq: 1, at }]));
    expect(reported).toEqual(["runStarted: broken sink", "approvalRequested: broken sink"]);
  });
});
