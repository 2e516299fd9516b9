import { describe, expect, it } from "vitest";
import { InputWithdrawnError } from "../../src/agent/loop-context.js";
import type { PendingInput } from "../../src/agent/pending-input.js";
import { toolCall } from "../fakes/scripted-model.js";
import { expectConsistent, Harness, testTool } from "./harness.js";

describe("input that joins a running loop (the pendingInput hook)", () => {
  it("is committed as user messages after a turn's tool results and sent with the next model request", async () => {
    const list = testTool({ name: "list_files" });
    const h = new Harness({
      tools: [list],
      steps: [{ toolCalls: [toolCall("c1", "list_files", {}), toolCall("c2", "list_files", {})] }, { text: "done" }],
    });
    const queue: PendingInput[] = [];
    let asked = 0;
    const commits: string[] = [];
    const result = await h.run({
      pendingInput: async () => {
        asked++;
        // Arrives during the first turn's tools: taken before the second model request.
        if (asked === 1) queue.push({ id: "in_1", content: "also this" }, { id: "in_2", content: "and that" });
        return asked === 2 ? queue.splice(0) : [];
      },
      commit: async (item) => {
        if (item.type === "message") {
          commits.push(`${item.message.role}${item.inputId ? `:${item.inputId}` : ""}`);
          h.committed.push(structuredClone(item.message));
        }
      },
    });
    expect(result.stopReason).toBe("complete");
    expect(asked).toBe(2);
    expect(commits).toEqual(["user", "assistant", "tool", "tool", "user:in_1", "user:in_2", "assistant"]);
    expect(h.model.requests[0]?.messages.map((m) => m.role)).toEqual(["user"]);
    const second = h.model.requests[1]?.messages ?? [];
    expect(second.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "user", "user"]);
    expect(second.slice(-2).map((m) => [m.id, m.content])).toEqual([
      ["in_1", "also this"],
      ["in_2", "and that"],
    ]);
    expectConsistent(h, result);
  });

  it("a hook that throws stops the run with error before the model request; a failed commit of the input too", async () => {
    const h = new Harness({ steps: [] });
    const failed = await h.run({
      pendingInput: async () => {
        throw new Error("database gone");
      },
    });
    expect(failed.stopReason).toBe("error");
    expect(failed.error).toMatchObject({ code: "PENDING_INPUT_FAILED" });
    expect(failed.error?.message).toContain("database gone");
    expect(h.model.requests).toHaveLength(0);

    const refused = new Harness({
      steps: [],
      onCommit: (m) => {
        if (m.role === "user" && m.content === "late") throw new Error("input_taken");
      },
    });
    const stopped = await refused.run({ pendingInput: async () => [{ id: "in_x", content: "late" }] });
    expect(stopped.stopReason).toBe("error");
    expect(stopped.error).toMatchObject({ code: "PERSISTENCE_FAILED" });
    expect(refused.model.requests).toHaveLength(0);
    expect(refused.committed.map((m) => m.content)).not.toContain("late");
  });

  it("input withdrawn since the hook read it (its commit throws InputWithdrawnError) is skipped, and the run goes on", async () => {
    const h = new Harness({
      steps: [{ text: "done" }],
      onCommit: (m) => {
        if (m.role === "user" && m.content === "withdrawn") throw new InputWithdrawnError();
      },
    });
    const input = [
      { id: "in_w", content: "withdrawn" },
      { id: "in_k", content: "kept" },
    ];
    const result = await h.run({ pendingInput: async () => input.splice(0) });
    expect(result.stopReason).toBe("complete");
    expect(h.committed.map((m) => m.content)).not.toContain("withdrawn");
    const sent = h.model.requests[0]?.messages.map((m) => m.content) ?? [];
    expect(sent).toContain("kept");
    expect(sent).not.toContain("withdrawn");
  });
});

/**
 * A cancel while the input was being read (or committed) before a model request: the input was
 * committed to the cancelled run and a model request begun (a `turn.started`, counted in
 * `modelCalls`) with the signal already fired. Now input read after the cancel is left to the
 * host (a run that ended without it: its own run, as the steer says), and no request is begun.
 */
describe("a cancel while input joins the run", () => {
  it("while the hook reads it: the input is not committed and no model request is begun", async () => {
    const h = new Harness({ steps: [{ text: "never asked" }] });
    const result = await h.run({
      pendingInput: async () => {
        h.abort();
        return [{ id: "in_late", content: "late" }];
      },
    });
    expect({
      stopReason: result.stopReason,
      modelCalls: result.stats.modelCalls,
      requests: h.model.requests.length,
      committed: h.committed.map((m) => m.content),
    }).toEqual({ stopReason: "aborted", modelCalls: 0, requests: 0, committed: ["hello"] });
  });

  it("while its commit is written: it is kept, and no model request is begun", async () => {
    const h = new Harness({
      steps: [{ text: "never asked" }],
      onCommit: (m) => {
        if (m.role === "user" && m.content === "late") h.abort();
      },
    });
    const result = await h.run({ pendingInput: async () => [{ id: "in_late", content: "late" }] });
    expect({
      stopReason: result.stopReason,
      modelCalls: result.stats.modelCalls,
      requests: h.model.requests.length,
      committed: h.committed.map((m) => m.content),
    }).toEqual({ stopReason: "aborted", modelCalls: 0, requests: 0, committed: ["hello", "late"] });
  });
});
