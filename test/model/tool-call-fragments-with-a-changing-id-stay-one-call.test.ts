import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness, sse } from "./raw-harness.js";

/**
 * Some OpenAI-compatible servers give a tool call's continuation fragments another `id` than
 * its first fragment (Poolside's /chat/completions: poolsideai/pool#9, "the first chunk carries
 * one ID (alongside the function name), and all subsequent chunks carry a different ID"; older
 * mlx-openai-server made a new id per delta). The fragments share the call's `index`, and the
 * OpenAI stream format keys fragments by `index` (the SDK's own accumulator joins them so).
 *
 * The server takes the first continuation fragment with a new id for the start of a second call,
 * which has no function name, so the whole reply fails MODEL_BAD_RESPONSE "tool call #1 without
 * a function name" and the run ends `error`: an ordinary one-call reply from such a provider can
 * never be used. A fragment that brings a new id but no name, at an index whose call is named,
 * cannot start a call (a call needs a name); it continues the call at its index.
 *
 * Expected: one `list_files` call with its whole arguments, run, and the run completes.
 */
const fragment = (tool_calls: unknown[]) => ({ choices: [{ index: 0, delta: { tool_calls }, finish_reason: null }] });

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("a tool call whose continuation fragments carry another id than its first (same index)", () => {
  it("is one call with its whole arguments, and the run completes", async () => {
    h = await harness([
      {
        writes: sse([
          { choices: [{ index: 0, delta: { role: "assistant", content: null }, finish_reason: null }] },
          fragment([{ index: 0, id: "call_first", type: "function", function: { name: "list_files", arguments: "" } }]),
          fragment([{ index: 0, id: "call_second", type: "function", function: { arguments: '{"pa' } }]),
          fragment([{ index: 0, id: "call_second", type: "function", function: { arguments: 'th":"."}' } }]),
          { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
        ]),
      },
      { writes: sse([{ choices: [{ index: 0, delta: { content: "done" }, finish_reason: "stop" }] }]) },
    ]);
    const { run, messages } = await h.run("go", { approval: { default: "allow" } });
    expect(run.error).toBeNull();
    expect(run.stopReason).toBe("complete");
    expect(messages[1].toolCalls).toHaveLength(1);
    expect(messages[1].toolCalls[0]).toMatchObject({ name: "list_files", input: '{"path":"."}' });
    expect(messages[2]).toMatchObject({ role: "tool", toolCallId: messages[1].toolCalls[0].id });
    expect(messages[2].isError).toBeFalsy();
  });

  it("stays one call when every fragment has an id of its own (older mlx-openai-server), beside a second call", async () => {
    h = await harness([
      {
        writes: sse([
          fragment([{ index: 0, id: "call_a1", type: "function", function: { name: "list_files", arguments: "" } }]),
          fragment([{ index: 0, id: "call_a2", type: "function", function: { arguments: '{"pa' } }]),
          fragment([{ index: 0, id: "call_a3", type: "function", function: { arguments: 'th":"."}' } }]),
          fragment([{ index: 1, id: "call_b1", type: "function", function: { name: "list_files", arguments: "" } }]),
          fragment([{ index: 1, id: "call_b2", type: "function", function: { arguments: '{"depth":1}' } }]),
          { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
        ]),
      },
      { writes: sse([{ choices: [{ index: 0, delta: { content: "done" }, finish_reason: "stop" }] }]) },
    ]);
    const { run, messages } = await h.run("go", { approval: { default: "allow" } });
    expect(run.stopReason).toBe("complete");
    expect(messages[1].toolCalls).toMatchObject([
      { id: "call_a1", name: "list_files", input: '{"path":"."}' },
      { id: "call_b1", name: "list_files", input: '{"depth":1}' },
    ]);
  });
});
