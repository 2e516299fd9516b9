import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness, sse } from "./raw-harness.js";

/**
 * Some OpenAI-compatible servers send `function.arguments` as a JSON object rather than a
 * string (text-generation-inference, huggingface/text-generation-inference#2136). The
 * assembler keeps only string arguments, so the object is dropped silently: the call is stored
 * with input "" and executed with `{}` (here: the workspace root listed instead of `sub`), and
 * nobody is told. Either keep the arguments (as their JSON text) or refuse the reply
 * (MODEL_BAD_RESPONSE); never run the call with arguments the model did not send.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("a tool call whose arguments arrive as a JSON object", () => {
  it("is run with the model's arguments, kept as their JSON text", async () => {
    h = await harness([
      {
        writes: sse([
          {
            choices: [
              {
                index: 0,
                delta: {
                  tool_calls: [
                    {
                      index: 0,
                      id: "call_1",
                      type: "function",
                      function: { name: "list_files", arguments: { path: "sub" } },
                    },
                  ],
                },
                finish_reason: "tool_calls",
              },
            ],
          },
        ]),
      },
      { writes: sse([{ choices: [{ index: 0, delta: { content: "done" }, finish_reason: "stop" }] }]) },
    ]);
    const { run, messages } = await h.run("go", { approval: { default: "allow" } });
    // Kept as their JSON text (refusing the reply would also have been correct; this server keeps them).
    expect(run.error).toBeNull();
    const call = messages[1].toolCalls[0];
    expect(call.name).toBe("list_files");
    expect(JSON.parse(call.input || "null")).toEqual({ path: "sub" });
  });
});
