import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";

let upstream: FakeUpstream;
beforeEach(async () => {
  upstream = await startFakeUpstream();
});
afterEach(async () => {
  await upstream.close();
});

function post(body: unknown): Promise<Response> {
  return fetch(`${upstream.baseURL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The `data:` payloads of an SSE body, JSON-parsed except the final `[DONE]`. */
async function frames(response: Response): Promise<unknown[]> {
  const text = await response.text();
  expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
  return text
    .split("\n\n")
    .filter((frame) => frame !== "")
    .map((frame) => {
      expect(frame.startsWith("data: ")).toBe(true);
      const data = frame.slice("data: ".length);
      return data === "[DONE]" ? data : JSON.parse(data);
    });
}

describe("fake OpenAI upstream (the wire format other tests rely on)", () => {
  it("streams role, content, finish, usage and [DONE] chunks in the Chat Completions shape", async () => {
    upstream.enqueue({ text: ["a", "b"], usage: { prompt_tokens: 3, completion_tokens: 2 } });
    const response = await post({ model: "m", messages: [], stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const all = await frames(response);
    const choice = (delta: unknown, finish: string | null = null) => ({
      id: "chatcmpl-fake-1",
      object: "chat.completion.chunk",
      created: expect.any(Number),
      model: "m",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      usage: null,
    });
    expect(all).toEqual([
      choice({ role: "assistant", content: "" }),
      choice({ content: "a" }),
      choice({ content: "b" }),
      choice({}, "stop"),
      {
        id: "chatcmpl-fake-1",
        object: "chat.completion.chunk",
        created: expect.any(Number),
        model: "m",
        choices: [],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      },
      "[DONE]",
    ]);
    expect(upstream.requests[0]!.body).toMatchObject({ model: "m", stream: true });
  });

  it("sends tool-call headers then argument pieces, interleaving parallel calls by index", async () => {
    upstream.enqueue({
      toolCalls: [
        { id: "c0", name: "f", arguments: ["{", "}"] },
        { id: "c1", name: "g", arguments: "[]" },
      ],
    });
    const all = (await frames(await post({ model: "m", messages: [], stream: true }))) as Array<{
      choices: Array<{ delta: unknown; finish_reason: string | null }>;
      usage?: unknown;
    }>;
    expect(all.at(-1)).toBe("[DONE]");
    const deltas = all.slice(0, -1).map((f) => f.choices[0]?.delta);
    expect(deltas).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: "c0", type: "function", function: { name: "f", arguments: "" } }],
      },
      { tool_calls: [{ index: 1, id: "c1", type: "function", function: { name: "g", arguments: "" } }] },
      { tool_calls: [{ index: 0, function: { arguments: "{" } }] },
      { tool_calls: [{ index: 1, function: { arguments: "[]" } }] },
      { tool_calls: [{ index: 0, function: { arguments: "}" } }] },
      {},
    ]);
    expect(all[all.length - 2]).toMatchObject({ choices: [{ finish_reason: "tool_calls" }] });
    // No include_usage asked: no usage chunk and no `usage` field.
    expect(all.some((f) => typeof f === "object" && "usage" in f)).toBe(false);
  });

  it("answers scripted HTTP errors with the JSON body and a tiny retry-after-ms", async () => {
    upstream.enqueue({ status: 429, errorBody: { error: { message: "slow down" } } });
    const response = await post({ model: "m", messages: [], stream: true });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after-ms")).toBe("1");
    expect(await response.json()).toEqual({ error: { message: "slow down" } });
  });

  it("fails visibly (500, not retryable) when no reply is scripted, unless a fallback is set", async () => {
    const response = await post({ model: "m", messages: [] });
    expect(response.status).toBe(500);
    expect(response.headers.get("x-should-retry")).toBe("false");
    expect(JSON.stringify(await response.json())).toContain("no scripted reply");

    upstream.fallback = () => ({ text: "fallback" });
    const ok = await post({ model: "m", messages: [] });
    expect(await ok.json()).toMatchObject({ choices: [{ message: { content: "fallback" }, finish_reason: "stop" }] });
  });

  it("lists the model at GET /v1/models", async () => {
    const response = await fetch(`${upstream.baseURL}/models`);
    expect(await response.json()).toMatchObject({ object: "list", data: [{ id: "fake-model" }] });
  });

  it("assertComplete throws while scripted replies are left", () => {
    upstream.enqueue({ text: "unused" });
    expect(() => upstream.assertComplete()).toThrow(/1 scripted reply was not consumed/);
  });

  it("close() returns promptly even with a request hanging before headers", async () => {
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    upstream.enqueue({ hang: "before-headers", onRequest: () => arrived() });
    const hanging = post({ model: "m", messages: [], stream: true }).catch((error: unknown) => error);
    await requestArrived;
    const started = Date.now();
    await upstream.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await hanging).toBeInstanceOf(Error);
  });
});
