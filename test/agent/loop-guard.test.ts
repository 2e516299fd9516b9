import { describe, expect, it } from "vitest";
import { z } from "zod";
import { callFingerprint } from "../../src/agent/fingerprint.js";
import { toolError, toolOk } from "../../src/agent/tool.js";
import { toolCall } from "../fakes/scripted-model.js";
import { expectConsistent, Harness, testTool } from "./harness.js";

/** A read_file that finds nothing: every call fails with NOT_FOUND. */
const missingFileReader = () =>
  testTool<{ path: string; startLine?: number }>({
    name: "read_file",
    readOnly: true,
    schema: z.object({ path: z.string(), startLine: z.number().optional() }),
    execute: async ({ path }) => toolError("NOT_FOUND", `no such file: ${path}`, true),
  });

const readMissing = (id: string, input: unknown = { path: "notes/todo.md" }) => ({
  toolCalls: [toolCall(id, "read_file", input)],
});

describe("the loop guard (loop_detected)", () => {
  it("three identical failing read_file calls stop the run loop_detected, and the fourth is never proposed to a tool", async () => {
    const reader = missingFileReader();
    const h = new Harness({
      tools: [reader],
      // Key order differs: the fingerprint is of the canonical arguments.
      steps: [
        readMissing("c1"),
        readMissing("c2", '{ "path": "notes/todo.md" }'),
        readMissing("c3"),
        readMissing("c4"),
      ],
    });
    const result = await h.run({ loopRepeatLimit: 3 });
    expect(result.stopReason).toBe("loop_detected");
    expect(reader.executions.map((e) => e.toolCallId)).toEqual(["c1", "c2", "c3"]);
    // The run stopped before the next model request: the fourth call was never even proposed.
    expect(h.model.requests).toHaveLength(3);
    expect(result.stopDetail).toBe(
      'stopped after turn 3: read_file {"path":"notes/todo.md"} failed with NOT_FOUND 3 times in a row; ' +
        "check the file name or path (list_files shows what exists)",
    );
    expect(result.error).toBeNull();
    expectConsistent(h, result);
  });

  it("the same call with different arguments does not count", async () => {
    const reader = missingFileReader();
    const h = new Harness({
      tools: [reader],
      steps: [
        readMissing("c1", { path: "a.md" }),
        readMissing("c2", { path: "a.md" }),
        readMissing("c3", { path: "a.md", startLine: 2 }),
        readMissing("c4", { path: "a.md" }),
        { text: "the file does not exist" },
      ],
    });
    const result = await h.run({ loopRepeatLimit: 3 });
    expect(result.stopReason).toBe("complete");
    expect(result.stopDetail).toBeNull();
    expect(reader.executions).toHaveLength(4);
    h.model.assertComplete();
  });

  it("the same call returning the same result N times in a row stops the run loop_detected (no new information)", async () => {
    const status = testTool({ name: "status", readOnly: true, execute: async () => toolOk("still building") });
    const h = new Harness({
      tools: [status],
      steps: [1, 2, 3].map((n) => ({ toolCalls: [toolCall(`s${n}`, "status", { text: "job-7" })] })),
    });
    const result = await h.run({ loopRepeatLimit: 3 });
    expect(result.stopReason).toBe("loop_detected");
    expect(result.stopDetail).toContain("returned the same result 3 times in a row");
    h.model.assertComplete();
  });

  it("the same call whose result changes does not count, nor does a failure with another error code", async () => {
    let n = 0;
    const counter = testTool({ name: "status", readOnly: true, execute: async () => toolOk(`step ${++n}`) });
    const h = new Harness({
      tools: [counter],
      steps: [
        ...[1, 2, 3, 4].map((i) => ({ toolCalls: [toolCall(`s${i}`, "status", { text: "job" })] })),
        { text: "done" },
      ],
    });
    expect((await h.run({ loopRepeatLimit: 3 })).stopReason).toBe("complete");
  });

  it("calls the host did not run (over the per-reply cap, after a failure) are passed over, not counted", async () => {
    const status = testTool({ name: "status", readOnly: true, execute: async () => toolOk("same") });
    const h = new Harness({
      tools: [status],
      steps: [{ toolCalls: [1, 2, 3, 4].map((n) => toolCall(`s${n}`, "status", { text: "x" })) }, { text: "done" }],
    });
    const result = await h.run({ loopRepeatLimit: 3, maxToolCallsPerTurn: 2 });
    expect(result.stopReason).toBe("complete");
    expect(h.toolResults().map((m) => m.metadata.errorCode)).toEqual([
      null,
      null,
      "TOO_MANY_TOOL_CALLS",
      "TOO_MANY_TOOL_CALLS",
    ]);
  });

  it("a repeat limit of 0 turns the guard off", async () => {
    const h = new Harness({
      tools: [missingFileReader()],
      steps: [readMissing("c1"), readMissing("c2"), { text: "gave up" }],
    });
    expect((await h.run({ loopRepeatLimit: 0 })).stopReason).toBe("complete");
  });

  it("resuming counts the run's earlier calls toward the same repeat count", async () => {
    const reader = missingFileReader();
    const first = new Harness({ tools: [reader], steps: [readMissing("c1"), readMissing("c2"), { text: "x" }] });
    const before = await first.run({ loopRepeatLimit: 3, maxTurns: 2 });
    expect(before.stopReason).toBe("max_turns");
    // The restart: the run's two failing calls are in the history it resumes from.
    const prior = [{ id: "old", role: "user" as const, content: "earlier run" }];
    const resumed = new Harness({
      tools: [reader],
      resume: true,
      history: [...prior, ...first.committed],
      steps: [readMissing("c3"), readMissing("c4")],
    });
    const result = await resumed.run({ loopRepeatLimit: 3, runStart: prior.length, priorStats: before.stats });
    expect(result.stopReason).toBe("loop_detected");
    expect(resumed.model.requests).toHaveLength(1);
    expect(reader.executions.map((e) => e.toolCallId)).toEqual(["c1", "c2", "c3"]);
  });

  it("fingerprints ignore key order and white space, and differ by tool and by arguments", () => {
    const a = callFingerprint({ name: "read_file", input: '{"path":"a","startLine":1}' });
    expect(callFingerprint({ name: "read_file", input: ' { "startLine": 1, "path": "a" } ' })).toBe(a);
    expect(callFingerprint({ name: "list_files", input: '{"path":"a","startLine":1}' })).not.toBe(a);
    expect(callFingerprint({ name: "read_file", input: '{"path":"b","startLine":1}' })).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
  });
});
