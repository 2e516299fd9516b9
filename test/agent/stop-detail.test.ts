import { describe, expect, it } from "vitest";
import { BECAUSE_SESSION_DELETED, describeStop } from "../../src/agent/stop-detail.js";

describe("stopDetail: one sentence naming the step, the cause and what to try", () => {
  // A point after turn 0 (a run ended before any model call) used to read "after turn 1".
  it("says before turn 1 for a run that did no turn", () => {
    expect(describeStop({ stopReason: "aborted", point: { phase: "after_turn", turn: 0 }, by: "because X" })).toBe(
      "stopped before turn 1: the run was cancelled because X; start a new run to continue",
    );
  });

  it("gives no advice to start a new run to a run cancelled because its session was deleted: none can be", () => {
    const point = { phase: "in_turn", turn: 2 } as const;
    expect(describeStop({ stopReason: "aborted", point, by: BECAUSE_SESSION_DELETED })).toBe(
      "stopped in turn 2: the run was cancelled because its session was deleted",
    );
    expect(
      describeStop({ stopReason: "aborted", point, by: `${BECAUSE_SESSION_DELETED} before the server restarted` }),
    ).toBe("stopped in turn 2: the run was cancelled because its session was deleted before the server restarted");
  });

  it("is written from the facts of each kind of stop", () => {
    expect(describeStop({ stopReason: "max_turns", point: { phase: "after_turn", turn: 20 }, maxTurns: 20 })).toBe(
      "stopped after turn 20: the run made its 20 model requests (maxTurns) and the model was still calling tools; " +
        "raise maxTurns or continue in a new run",
    );
    expect(
      describeStop({
        stopReason: "aborted",
        point: { phase: "in_turn", turn: 2, toolCall: { id: "call_7", tool: "shell" } },
        by: "by a DELETE /runs/{id} request",
      }),
    ).toBe(
      "stopped in turn 2 at tool call call_7 (shell): the run was cancelled by a DELETE /runs/{id} request; start a new run to continue",
    );
    expect(
      describeStop({
        stopReason: "error",
        point: { phase: "in_turn", turn: 3 },
        error: { code: "MODEL_RATE_LIMITED", message: "the upstream answered 429 three times" },
      }),
    ).toBe(
      "stopped in turn 3: the upstream answered 429 three times (MODEL_RATE_LIMITED); retry later or lower the request rate",
    );
    expect(
      describeStop({
        stopReason: "budget_exhausted",
        point: { phase: "before_turn", turn: 4 },
        budget: { budget: "duration", used: 61_250, limit: 60_000 },
      }),
    ).toBe("stopped before turn 4: this run has run for 61.3 s of its 60 s; raise maxDurationMs or start a new run");
    const long = { path: "x".repeat(200) };
    const loop = describeStop({
      stopReason: "loop_detected",
      point: { phase: "after_turn", turn: 5 },
      loop: {
        kind: "same_error",
        tool: "shell",
        fingerprint: "0123456789abcdef",
        arguments: JSON.stringify(long),
        errorCode: "SOMETHING_NEW",
        count: 3,
      },
    });
    expect(loop).toMatch(
      /^stopped after turn 5: shell \{"path":"x+\.\.\. failed with SOMETHING_NEW 3 times in a row; change the request, or raise loopRepeatLimit$/,
    );
  });

  it("a model request the server had no descriptor for says to retry shortly, not that the provider failed", () => {
    const detail = describeStop({
      stopReason: "error",
      point: { phase: "before_turn", turn: 2 },
      error: { code: "MODEL_OUT_OF_DESCRIPTORS", message: "the server has no file descriptor left (EMFILE)" },
    });
    expect(detail).toBe(
      "stopped before turn 2: the server has no file descriptor left (EMFILE) (MODEL_OUT_OF_DESCRIPTORS); " +
        "retry shortly; if it keeps happening, lower MAX_CONNECTIONS or raise the server's open-file limit (ulimit -n)",
    );
  });
});
