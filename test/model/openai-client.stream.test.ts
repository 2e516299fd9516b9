import diagnosticsChannel from "node:diagnostics_channel";
import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/messages.js";
import { createOpenAIModelClient } from "../../src/model/openai-client.js";
import type { FakeReply } from "../fakes/openai-upstream.js";
import { until } from "../helpers/until.js";
import {
  clientFor,
  lookupTool,
  messageOf,
  request,
  TEST_API_KEY,
  upstream,
  useFakeUpstream,
  userMessage,
} from "./support.js";

useFakeUpstream();

describe("OpenAI model client: a clean stream", () => {
  it("reads the body past [DONE] to its end, so the next requests reuse the same upstream connection", async () => {
    const client = clientFor(upstream);
    const before = upstream.connections();
    // The bodies undici has read to their end (its diagnostics channel), this upstream's only.
    const origin = new URL(upstream.baseURL).origin;
    let ended = 0;
    const onEnd = (message: unknown) => {
      if (String((message as { request: { origin: unknown } }).request.origin) === origin) ended++;
    };
    diagnosticsChannel.subscribe("undici:request:trailers", onEnd);
    try {
      for (const [index, word] of ["one", "two", "three"].entries()) {
        // The body's end is its own write, a few ms after [DONE]: the reply is complete before it.
        upstream.enqueue({ text: [word], endAfterDoneMs: 5 });
        expect(await client.complete(request())).toMatchObject({ ok: true, text: word });
        // A run's next request comes after its tools, by when the body's end has been read in the
        // background: waited for here (a fixed wait could end before it on a loaded machine). Its
        // connection is free for the next request one turn of the event loop after that.
        await until(
          () => ended,
          (n) => n === index + 1,
          `the end of body ${index + 1}`,
        );
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      diagnosticsChannel.unsubscribe("undici:request:trailers", onEnd);
    }
    expect(upstream.connections() - before).toBe(1);
  });

  it("a reply complete at [DONE] does not wait for a body that stays open after it", async () => {
    upstream.enqueue({ text: ["done"], endAfterDoneMs: 3_000 });
    const started = Date.now();
    expect(await clientFor(upstream).complete(request())).toMatchObject({ ok: true, text: "done" });
    // The body ends 3 s after [DONE]; the reply came long before (the rest is read in the background).
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it("streams text, passing each delta to onTextDelta in order, and returns the whole text", async () => {
    upstream.enqueue({ text: ["Hel", "lo, ", "world"] });
    const deltas: string[] = [];
    const result = await clientFor(upstream).complete(request({ onTextDelta: (t) => deltas.push(t) }));

    expect(deltas).toEqual(["Hel", "lo, ", "world"]);
    expect(result).toMatchObject({ ok: true, text: "Hello, world", toolCalls: [], finishReason: "stop" });
  });

  it("assembles two parallel tool calls from fragments spread over interleaved chunks", async () => {
    upstream.enqueue({
      toolCalls: [
        { id: "call_a", name: "lookup", arguments: ['{"ke', 'y":', '"a"}'] },
        { id: "call_b", name: "read_file", arguments: ['{"path"', ':"x.txt"}'] },
      ],
    });
    const result = await clientFor(upstream).complete(request({ tools: [lookupTool] }));

    expect(result).toMatchObject({
      ok: true,
      text: "",
      finishReason: "tool_calls",
      toolCalls: [
        { id: "call_a", name: "lookup", input: '{"key":"a"}' },
        { id: "call_b", name: "read_file", input: '{"path":"x.txt"}' },
      ],
    });
  });

  it("returns text and tool calls of the same turn together", async () => {
    upstream.enqueue({ text: ["Let me look."], toolCalls: [{ id: "call_1", name: "lookup", arguments: "{}" }] });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({
      ok: true,
      text: "Let me look.",
      toolCalls: [{ id: "call_1", name: "lookup", input: "{}" }],
    });
  });

  it("a reply past maxOutputChars (text or tool arguments) fails MODEL_OUTPUT_TOO_LARGE at once, reading no further", async () => {
    const never = new Promise<void>(() => {});
    const client = clientFor(upstream, { maxOutputChars: 1000, idleTimeoutMs: 60_000 });
    // The upstream would hold the stream open for ever after these chunks: only the cap ends it.
    upstream.enqueue({ text: ["x".repeat(600), "y".repeat(600)], gate: never });
    const deltas: string[] = [];
    const text = await client.complete(request({ onTextDelta: (t) => deltas.push(t) }));
    expect(text).toMatchObject({ ok: false, code: "MODEL_OUTPUT_TOO_LARGE" });
    // The piece that would pass the cap is not passed on (nor stored as a delta).
    expect(deltas).toEqual(["x".repeat(600)]);
    expect(text.ok ? "" : text.message).toMatch(/passed 1000 characters .*\(MODEL_MAX_OUTPUT_CHARS\)/);

    upstream.enqueue({
      toolCalls: [{ id: "call_big", name: "lookup", arguments: ['{"key":"', "k".repeat(1200), '"}'] }],
      gate: never,
    });
    expect(await client.complete(request({ tools: [lookupTool] }))).toMatchObject({
      ok: false,
      code: "MODEL_OUTPUT_TOO_LARGE",
    });
    // Within the cap, nothing changes.
    upstream.enqueue({ text: "z".repeat(999) });
    expect(await client.complete(request())).toMatchObject({ ok: true, text: "z".repeat(999) });
  });

  it("the output cap holds while one huge chunk streams: a 25 MB line is given up after the bytes the cap allows, unparsed", async () => {
    const client = clientFor(upstream, { maxOutputChars: 1000 });
    const piece = "x".repeat(1024 * 1024);
    const reply: FakeReply = {
      raw: [
        'data: {"choices":[{"index":0,"delta":{"content":"',
        ...Array.from({ length: 25 }, () => piece),
        '"}}]}\n\n',
      ],
    };
    upstream.enqueue(reply);
    const result = await client.complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_OUTPUT_TOO_LARGE" });
    expect(messageOf(result)).toMatch(/passed 1000 characters .*\(MODEL_MAX_OUTPUT_CHARS\)/);
    // The client stopped reading: the upstream could not write most of the line.
    await expect.poll(() => reply.rawWritten).toBeGreaterThan(0);
    expect(reply.rawWritten).toBeLessThan(10);

    // Without a tight output cap, one event is still held to 8 MiB.
    const big: FakeReply = {
      raw: ['data: {"choices":[{"index":0,"delta":{"content":"', ...Array.from({ length: 25 }, () => piece)],
    };
    upstream.enqueue(big);
    const uncapped = await clientFor(upstream, { maxOutputChars: 100_000_000 }).complete(request());
    expect(uncapped).toMatchObject({ ok: false, code: "MODEL_OUTPUT_TOO_LARGE" });
    expect(messageOf(uncapped)).toMatch(/one stream event of more than 8388608 bytes/);
    expect(big.rawWritten).toBeLessThan(20);
  });

  it("reports usage from the final usage chunk", async () => {
    upstream.enqueue({ text: "ok", usage: { prompt_tokens: 123, completion_tokens: 45 } });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: true, usage: { inputTokens: 123, outputTokens: 45 } });
  });

  it("reports zero usage when the upstream sends no usage chunk", async () => {
    upstream.enqueue({ text: "ok", usage: null });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: true, usage: { inputTokens: 0, outputTokens: 0 } });
  });

  it("measures latency and first-token time (null when nothing streamed)", async () => {
    upstream.enqueue({ text: "ok" });
    const result = await clientFor(upstream).complete(request());
    expect(result.timing.latencyMs).toBeGreaterThanOrEqual(0);
    expect(result.timing.firstTokenMs).not.toBeNull();
    expect(result.timing.firstTokenMs!).toBeLessThanOrEqual(result.timing.latencyMs);

    upstream.enqueue({ text: [], usage: null });
    const empty = await clientFor(upstream).complete(request());
    expect(empty).toMatchObject({ ok: true, text: "", toolCalls: [], timing: { firstTokenMs: null } });
  });
});

describe("OpenAI model client: what it sends", () => {
  it("sends the system prompt first, tool calls with content null, tool results with their ids, the tools and include_usage", async () => {
    upstream.enqueue({ text: "done" });
    const history: AgentMessage[] = [
      userMessage("look up a and b"),
      {
        id: "a1",
        role: "assistant",
        content: "",
        toolCalls: [
          { id: "call_a", name: "lookup", input: '{"key":"a"}' },
          { id: "call_b", name: "lookup", input: '{"key":"b"}' },
        ],
      },
      {
        id: "t1",
        role: "tool",
        toolCallId: "call_a",
        content: "A",
        isError: false,
        metadata: { errorCode: null, retryable: false, durationMs: 1, outputChars: 1, truncated: false },
      },
      {
        id: "t2",
        role: "tool",
        toolCallId: "call_b",
        content: "unknown key",
        isError: true,
        metadata: { errorCode: "NOT_FOUND", retryable: false, durationMs: 1, outputChars: 11, truncated: false },
      },
      { id: "a2", role: "assistant", content: "Partly found." },
      userMessage("thanks"),
    ];
    const result = await clientFor(upstream).complete(
      request({ system: "You are terse.", messages: history, tools: [lookupTool] }),
    );
    expect(result.ok).toBe(true);

    expect(upstream.requests).toHaveLength(1);
    const { body, headers } = upstream.requests[0]!;
    expect(body.model).toBe("test-model");
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "look up a and b" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "lookup", arguments: '{"key":"a"}' } },
          { id: "call_b", type: "function", function: { name: "lookup", arguments: '{"key":"b"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "A" },
      { role: "tool", tool_call_id: "call_b", content: "unknown key" },
      { role: "assistant", content: "Partly found." },
      { role: "user", content: "thanks" },
    ]);
    expect(body.tools).toEqual([
      {
        type: "function",
        function: { name: "lookup", description: "Look a key up", parameters: lookupTool.parameters },
      },
    ]);
    expect(headers.authorization).toBe(`Bearer ${TEST_API_KEY}`);
  });

  it("keeps the text of an assistant message that has both text and tool calls", async () => {
    upstream.enqueue({ text: "ok" });
    await clientFor(upstream).complete(
      request({
        messages: [
          userMessage("go"),
          { id: "a", role: "assistant", content: "Looking.", toolCalls: [{ id: "c", name: "lookup", input: "{}" }] },
        ],
      }),
    );
    expect(upstream.requests[0]!.body.messages[1]).toMatchObject({ role: "assistant", content: "Looking." });
  });

  it("omits tools when there are none and the system message when there is no system prompt", async () => {
    upstream.enqueue({ text: "ok" });
    await clientFor(upstream).complete(request());
    const { body } = upstream.requests[0]!;
    expect(body).not.toHaveProperty("tools");
    expect(body.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("asks the request's model when it names one, the configured model otherwise", async () => {
    upstream.enqueue({ text: "a" }, { text: "b" });
    const client = clientFor(upstream);
    await client.complete(request({ model: "other-model" }));
    await client.complete(request());
    expect(upstream.requests.map((r) => r.body.model)).toEqual(["other-model", "test-model"]);
  });

  it("sends no Authorization header when no API key is configured (local servers)", async () => {
    upstream.enqueue({ text: "ok" });
    const client = createOpenAIModelClient({ baseURL: upstream.baseURL, model: "local", maxRetries: 0 });
    const result = await client.complete(request());
    expect(result.ok).toBe(true);
    expect(upstream.requests[0]!.headers.authorization).toBeUndefined();
  });
});

describe("OpenAI model client: finish reasons", () => {
  it.each([
    ["stop", undefined],
    ["tool_calls", undefined],
  ])("accepts finish_reason %s", async (finishReason) => {
    upstream.enqueue({ text: "x", finishReason });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: true, finishReason });
  });

  it("fails finish_reason length with MODEL_LENGTH", async () => {
    upstream.enqueue({ text: "truncated…", finishReason: "length" });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({
      ok: false,
      code: "MODEL_LENGTH",
      message: "model output reached the token limit",
      finishReason: "length",
      usage: { inputTokens: 10, outputTokens: 5 },
    });
  });

  it("fails finish_reason content_filter with MODEL_CONTENT_FILTER", async () => {
    upstream.enqueue({ text: "x", finishReason: "content_filter" });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_CONTENT_FILTER", finishReason: "content_filter" });
    expect(result.ok || result.message).toMatch(/content filter/);
  });

  it.each(["function_call", "weird_reason"])("fails finish_reason %s with MODEL_UNSUPPORTED_FINISH", async (reason) => {
    upstream.enqueue({ text: "x", finishReason: reason });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({
      ok: false,
      code: "MODEL_UNSUPPORTED_FINISH",
      message: `unsupported finish_reason: ${reason}`,
      finishReason: reason,
    });
  });

  it("a stream ended by [DONE] without any finish_reason is complete: stop, or tool_calls when calls were assembled", async () => {
    upstream.enqueue({ text: "x", finishReason: null });
    expect(await clientFor(upstream).complete(request())).toMatchObject({ ok: true, text: "x", finishReason: "stop" });
    upstream.enqueue({ toolCalls: [{ id: "call_1", name: "lookup", arguments: "{}" }], finishReason: null });
    expect(await clientFor(upstream).complete(request())).toMatchObject({ ok: true, finishReason: "tool_calls" });
  });

  it("fails a body that just stops, without a finish_reason or [DONE], with MODEL_UNSUPPORTED_FINISH (nothing kept)", async () => {
    upstream.enqueue({ text: "x", finishReason: null, noDone: true });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_UNSUPPORTED_FINISH" });
    expect(result.ok || result.finishReason).toBeUndefined();
    expect(result.ok || result.message).toMatch(/ended without a finish_reason or \[DONE\]/);
  });

  it("a body that ends after its finish_reason but without [DONE] is still complete", async () => {
    upstream.enqueue({ text: "x", noDone: true });
    expect(await clientFor(upstream).complete(request())).toMatchObject({ ok: true, text: "x", finishReason: "stop" });
  });
});
