import { describe, expect, it } from "vitest";
import type { ModelRequest } from "../../src/agent/model.js";
import { gate } from "../fakes/gate.js";
import { fragments, ScriptedModel, toolCall } from "../fakes/scripted-model.js";
import { userMessage } from "./harness.js";

function request(signal = new AbortController().signal, deltas: string[] = []): ModelRequest {
  return {
    system: "sys",
    messages: [userMessage("hi")],
    tools: [],
    signal,
    onTextDelta: (text) => deltas.push(text),
  };
}

describe("ScriptedModel (the fake the loop tests rely on)", () => {
  it("plays replies in order, streams text in fragments, and records copies of the requests", async () => {
    const model = new ScriptedModel([{ text: "Hello world" }, { toolCalls: [toolCall("c1", "echo", { a: 1 })] }]);
    const deltas: string[] = [];
    const req = request(undefined, deltas);
    const first = await model.complete(req);
    req.messages.push(userMessage("mutated later"));
    const second = await model.complete(request());
    expect(first).toMatchObject({ ok: true, text: "Hello world", toolCalls: [], finishReason: "stop" });
    expect(second).toMatchObject({
      ok: true,
      text: "",
      toolCalls: [{ id: "c1", name: "echo", input: '{"a":1}' }],
      finishReason: "tool_calls",
    });
    expect(deltas).toEqual(["Hello ", "world"]);
    expect(model.requests[0]?.messages).toHaveLength(1);
    expect(model.requests[0]?.system).toBe("sys");
    expect(() => model.assertComplete()).not.toThrow();
  });

  it("fails a request beyond the script visibly: an error result and an assertComplete that throws", async () => {
    const model = new ScriptedModel([]);
    const result = await model.complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_BAD_RESPONSE" });
    expect(() => model.assertComplete()).toThrow(/unexpected model request #1/);
  });

  it("assertComplete throws while scripted steps remain", async () => {
    const model = new ScriptedModel([{ text: "a" }, { text: "b" }]);
    await model.complete(request());
    expect(() => model.assertComplete()).toThrow(/1 scripted step\(s\) were never requested/);
  });

  it("a gated reply ends with MODEL_ABORTED when the signal fires, unless it ignores the abort", async () => {
    const g = gate();
    const controller = new AbortController();
    const model = new ScriptedModel([
      { text: "ab", gate: g.wait },
      { text: "cd", gate: g.wait, onAbort: "ignore" },
    ]);
    const deltas: string[] = [];
    const pending = model.complete(request(controller.signal, deltas));
    await model.requestArrived(0);
    controller.abort();
    expect(await pending).toMatchObject({ ok: false, code: "MODEL_ABORTED" });
    expect(deltas).toEqual(["a"]);

    const ignoring = model.complete(request(controller.signal, deltas));
    g.open();
    expect(await ignoring).toMatchObject({ ok: true, text: "cd" });
    expect(deltas).toEqual(["a", "c", "d"]);
  });

  it("supports error steps and function steps", async () => {
    const model = new ScriptedModel([
      { error: { code: "MODEL_AUTH", message: "bad key" } },
      (req, index) => ({
        ok: true,
        text: `${index}:${req.messages.length}`,
        toolCalls: [],
        finishReason: "stop",
        usage: { inputTokens: 1, outputTokens: 1 },
        timing: { latencyMs: 0, firstTokenMs: null },
      }),
    ]);
    expect(await model.complete(request())).toMatchObject({ ok: false, code: "MODEL_AUTH", message: "bad key" });
    expect(await model.complete(request())).toMatchObject({ ok: true, text: "1:1" });
    model.assertComplete();
  });

  it("fragments splits text in at most two pieces that concatenate back", () => {
    expect(fragments("")).toEqual([]);
    expect(fragments("x")).toEqual(["x"]);
    expect(fragments("abcde")).toEqual(["abc", "de"]);
  });
});
