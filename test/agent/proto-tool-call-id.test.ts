/**
 * A call id the model sends is kept when it is new and usable, and "__proto__" was (letters
 * and "_"). The provider fields of that call (Gemini's extra_content thought signature) were
 * then assigned with `toolCallFields[id] = ...` on a plain object: for "__proto__" that set the
 * object's prototype instead of a key, so the committed assistant message (stored as JSON) had
 * no fields for the call, and the signature was not sent back after a restart. Such an id is
 * now renamed like any unusable one.
 */
import { describe, expect, it } from "vitest";
import type { ModelResult } from "../../src/agent/model.js";
import { Harness, testTool } from "../agent/harness.js";

const reply = (toolCalls: Extract<ModelResult, { ok: true }>["toolCalls"], text = ""): ModelResult => ({
  ok: true,
  text,
  toolCalls,
  finishReason: toolCalls.length ? "tool_calls" : "stop",
  usage: { inputTokens: 0, outputTokens: 0 },
  timing: { latencyMs: 1, firstTokenMs: 0 },
});

describe("provider fields of a call whose id is __proto__", () => {
  it("are committed under the call's id, like any other id", async () => {
    const fields = { extra_content: { google: { thought_signature: "sig" } } };
    const h = new Harness({
      tools: [testTool({ name: "echo" })],
      steps: [
        () => reply([{ id: "__proto__", name: "echo", input: '{"text":"a"}', providerFields: fields }]),
        () => reply([], "done"),
      ],
    });
    const result = await h.run();
    expect(result.stopReason).toBe("complete");
    const assistant = result.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
    if (assistant?.role !== "assistant") throw new Error("no assistant message with calls");
    const id = assistant.toolCalls?.[0]?.id as string;
    // As the store keeps it: JSON.
    const stored = JSON.parse(JSON.stringify(assistant.metadata ?? {})) as {
      toolCallFields?: Record<string, unknown>;
    };
    expect(Object.keys(stored.toolCallFields ?? {})).toEqual([id]);
  });
});
