import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness, sse } from "./raw-harness.js";

/**
 * Parallel calls that share one `index` (Ollama, proxies that translate Gemini or the Responses
 * API number every call 0) are told apart today only by a differing non-empty id. Without ids
 * (local servers that omit them), a fragment at an index whose call already has a name, naming
 * another function, is merged into that call: the second call is lost, the first gets
 * `{}{"path":"notes.txt"}` as arguments (INVALID_ARGUMENTS), and that text is sent back to the
 * provider. For indexless fragments README already says "a second function name ... starts a new call".
 */
const fragment = (tool_calls: unknown[], finish: string | null = null) => ({
  choices: [{ index: 0, delta: { tool_calls }, finish_reason: finish }],
});

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("two tool calls streamed at the same index without ids", () => {
  it("are two calls, each run with its own arguments", async () => {
    h = await harness([
      {
        writes: sse([
          fragment([{ index: 0, type: "function", function: { name: "list_files", arguments: "{}" } }]),
          fragment([
            { index: 0, type: "function", function: { name: "read_file", arguments: '{"path":"notes.txt"}' } },
          ]),
          { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
        ]),
      },
      { writes: sse([{ choices: [{ index: 0, delta: { content: "done" }, finish_reason: "stop" }] }]) },
    ]);
    const { run, messages } = await h.run("go", { approval: { default: "allow" } });
    expect(run.stopReason).toBe("complete");
    const calls = messages[1].toolCalls;
    expect(calls.map((c: { name: string; input: string }) => [c.name, c.input])).toEqual([
      ["list_files", "{}"],
      ["read_file", '{"path":"notes.txt"}'],
    ]);
    // Each call has its result, none INVALID_ARGUMENTS.
    const results = messages.filter((m: { role: string }) => m.role === "tool");
    expect(results).toHaveLength(2);
    expect(results.map((r: { metadata: { errorCode: string | null } }) => r.metadata.errorCode)).not.toContain(
      "INVALID_ARGUMENTS",
    );
  });
});
