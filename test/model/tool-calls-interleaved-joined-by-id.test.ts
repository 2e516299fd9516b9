import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness, sse } from "./raw-harness.js";

/**
 * Providers that put the call's id on every fragment identify each call by it; some also give
 * every parallel call one `index` (README: "parallel tool calls that share one index but have
 * different ids"). When such calls' fragments interleave, a fragment repeating call A's id after
 * call B began is taken for a third call (no name), and the whole reply fails
 * MODEL_BAD_RESPONSE "tool call #2 without a function name".
 */
const fragment = (tool_calls: unknown[]) => ({ choices: [{ index: 0, delta: { tool_calls }, finish_reason: null }] });

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("interleaved fragments of parallel calls sharing an index, each fragment carrying its call's id", () => {
  it("are joined to the call their id names", async () => {
    h = await harness([
      {
        writes: sse([
          fragment([{ index: 0, id: "call_a", type: "function", function: { name: "list_files", arguments: "" } }]),
          fragment([{ index: 0, id: "call_b", type: "function", function: { name: "read_file", arguments: "" } }]),
          fragment([{ index: 0, id: "call_a", function: { arguments: "{}" } }]),
          fragment([{ index: 0, id: "call_b", function: { arguments: '{"path":"notes.txt"}' } }]),
          { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
        ]),
      },
      { writes: sse([{ choices: [{ index: 0, delta: { content: "done" }, finish_reason: "stop" }] }]) },
    ]);
    const { run, messages } = await h.run("go", { approval: { default: "allow" } });
    expect(run.error).toBeNull();
    expect(run.stopReason).toBe("complete");
    expect(messages[1].toolCalls).toEqual([
      { id: "call_a", name: "list_files", input: "{}" },
      { id: "call_b", name: "read_file", input: '{"path":"notes.txt"}' },
    ]);
  });
});
