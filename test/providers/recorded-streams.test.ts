import { afterAll, describe, expect, it } from "vitest";
import type { FakeReply } from "../fakes/openai-upstream.js";
import { leftAsFound } from "../helpers/shared-server.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { recorded, recordedText } from "./replay.js";

/**
 * Streams recorded from real providers (test/fixtures/providers/SOURCES.md), replayed
 * verbatim by the fake upstream over HTTP to the real server and the real openai SDK: what
 * is committed, what the stats say, and what the next request sends back to that provider.
 */

/**
 * The file's servers, one for each environment its tests ask for (a start and a stop cost about
 * what a test does), each test in a session of its own. A server is used again only if the test
 * before left it as it found it (no run live, every scripted reply taken); otherwise it is
 * replaced.
 */
const servers = new Map<string, TestServer>();
afterAll(async () => {
  for (const server of servers.values()) await server.close();
  servers.clear();
});

async function serverWith(env: Record<string, string>): Promise<TestServer> {
  const key = JSON.stringify(env);
  const kept = servers.get(key);
  if (kept && (await leftAsFound(kept))) {
    kept.upstream.requests.length = 0;
    return kept;
  }
  servers.delete(key);
  await kept?.close();
  const started = await startTestServer({ env });
  servers.set(key, started);
  return started;
}

async function runOnce(
  replies: FakeReply[],
  {
    model,
    env = {},
    approval,
    providerProfile,
  }: { model?: string; env?: Record<string, string>; approval?: unknown; providerProfile?: string } = {},
) {
  const s = await serverWith(env);
  s.upstream.enqueue(...replies);
  const session = await s.request("POST", "/sessions", {
    body: {
      ...(model ? { model } : {}),
      ...(approval ? { approval } : {}),
      ...(providerProfile ? { providerProfile } : {}),
    },
  });
  expect(session.status).toBe(201);
  const started = await s.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "go" } });
  expect(started.status).toBe(200);
  const messages = await s.request("GET", `/sessions/${session.body.id}/messages`);
  s.upstream.assertComplete();
  return {
    s,
    sessionId: session.body.id as string,
    run: started.body.run,
    text: started.body.text,
    messages: messages.body.items,
  };
}

/** The messages the upstream was sent in request `n` (0-based). */
const sent = (s: TestServer, n: number) => s.upstream.requests[n]?.body.messages;

/** Runs a second turn and returns the messages it sent upstream: the history as the provider sees it. */
async function nextRequestAfter(s: TestServer, sessionId: string) {
  s.upstream.enqueue({ text: "ok" });
  await s.request("POST", `/sessions/${sessionId}/runs?wait=true`, { body: { input: "thanks" } });
  return sent(s, 1);
}

describe("recorded provider streams", () => {
  it("Mistral: content as an array of parts mixed with strings keeps every digit (391), thinking parts become reasoning", async () => {
    const { s, sessionId, run, messages } = await runOnce([recorded("mistral-small-mixed-content-parts.chunks.txt")]);
    expect(run).toMatchObject({ stopReason: "complete", stats: { inputTokens: 28, outputTokens: 139 } });
    const answer = messages.at(-1);
    expect(answer).toMatchObject({ role: "assistant", content: "391" });
    expect(answer.metadata.reasoning).toMatch(
      /^Okay, the user is asking for the product of 17 and 23\..*17 \* 23 = 391\.$/s,
    );
    expect(answer.content).not.toContain("Okay");

    // The next request sends the answer back as text, and no reasoning (the openai profile strips it).
    expect(await nextRequestAfter(s, sessionId)).toEqual([
      { role: "user", content: "go" },
      { role: "assistant", content: "391" },
      { role: "user", content: "thanks" },
    ]);
  });

  it("OpenRouter, Gemini 3: the reasoning_details fragments are folded into blocks, stored, and sent back with the call as the recorded client sent them", async () => {
    const { s, run, messages } = await runOnce(
      [
        recorded("openrouter-gemini-3-pro-reasoning-details-tool-call.sse"),
        recorded("openrouter-gemini-3-pro-after-tool-result.sse"),
      ],
      { model: "google/gemini-3-pro-preview", providerProfile: "openrouter" },
    );
    // The recorded client's own second request: the blocks it sent back (its call was made the same way).
    const recordedRequest = JSON.parse(recordedText("openrouter-gemini-3-pro-second-request.json"));
    const recordedBack = recordedRequest.messages[2];
    expect(run).toMatchObject({ stopReason: "complete", stats: { modelCalls: 2, inputTokens: 84, outputTokens: 138 } });
    const assistant = messages[1];
    expect(assistant).toMatchObject({
      role: "assistant",
      content: "",
      toolCalls: [
        { id: "tool_weather_wJMhKbJOiIeWsXDA84qT", name: "weather", input: '{"location":"Florence, Italy"}' },
      ],
    });
    // Two text fragments of index 0 made one block; the encrypted block (also index 0) its own.
    expect(assistant.metadata.reasoningDetails).toEqual(recordedBack.reasoning_details);
    expect(assistant.metadata.reasoningDetails.map((d: { type: string }) => d.type)).toEqual([
      "reasoning.text",
      "reasoning.encrypted",
    ]);
    // The reasoning text is kept once, from `reasoning` (the blocks repeat it).
    expect(assistant.metadata.reasoning).toBe(recordedBack.reasoning_details[0].text);
    expect(messages.at(-1)).toMatchObject({
      role: "assistant",
      content: "The weather in Florence, Italy, currently feels quite hot at 40°C.",
    });

    const back = sent(s, 1)[1];
    expect(back.reasoning_details).toEqual(recordedBack.reasoning_details);
    expect(back.tool_calls).toEqual(recordedBack.tool_calls);
  });

  it("OpenRouter's reasoning blocks are stored under every profile but sent back only under openrouter", async () => {
    const { s, messages } = await runOnce([
      recorded("openrouter-gemini-3-pro-reasoning-details-tool-call.sse"),
      recorded("openrouter-gemini-3-pro-after-tool-result.sse"),
    ]);
    expect(messages[1].metadata.reasoningDetails).toHaveLength(2);
    expect(sent(s, 1)[1]).not.toHaveProperty("reasoning_details");
    expect(Object.keys(sent(s, 1)[1]).sort()).toEqual(["content", "role", "tool_calls"]);
  });

  it("Magistral: a reply whose thinking and text both come as parts", async () => {
    const { run, text, messages } = await runOnce([recorded("magistral-thinking-parts.chunks.txt")]);
    expect(run).toMatchObject({ stopReason: "complete", stats: { inputTokens: 10, outputTokens: 46 } });
    expect(text).toBe("2 + 2 = 4");
    expect(messages.at(-1).metadata).toEqual({
      reasoning: "The user is asking for 2+2. This is basic arithmetic. 2+2=4.",
    });
  });

  it("Snowflake Cortex: a clean end (usage, then [DONE]) with no finish_reason in any chunk completes the run", async () => {
    const { s, sessionId, run, text, messages } = await runOnce([
      recorded("snowflake-cortex-clean-end-without-finish-reason.sse"),
    ]);
    expect(run).toMatchObject({ stopReason: "complete", error: null, stats: { inputTokens: 22, outputTokens: 5 } });
    expect(text).toBe("4");
    expect(messages.at(-1)).toMatchObject({ role: "assistant", content: "4" });
    // Every chunk carries `"refusal":""`: an empty refusal is no refusal.
    expect(messages.at(-1).metadata?.refusal).toBeUndefined();

    // The next request sends the answer back as plain text.
    expect(await nextRequestAfter(s, sessionId)).toEqual([
      { role: "user", content: "go" },
      { role: "assistant", content: "4" },
      { role: "user", content: "thanks" },
    ]);
  });

  it("Groq: usage only in x_groq.usage is counted", async () => {
    const { s, run, messages } = await runOnce([recorded("groq-x-groq-usage.sse"), { text: "done" }]);
    // 18 + 439 from x_groq, then the fake's 10 + 5.
    expect(run).toMatchObject({ stopReason: "complete", stats: { modelCalls: 2, inputTokens: 28, outputTokens: 444 } });
    expect(messages[1]).toMatchObject({
      role: "assistant",
      toolCalls: [{ id: "call_O17Uplv4lJvD6DVdIvFFeRMw", name: "test-tool", input: '{"value":"Sparkle Day"}' }],
    });
    const steps = await s.request("GET", `/runs/${run.id}/steps`);
    expect(steps.body.items[0].model.usage).toEqual({ inputTokens: 18, outputTokens: 439 });
  });

  it("Groq: usage in both places is counted once", async () => {
    const { run } = await runOnce([recorded("groq-tool-call.chunks.txt"), { text: "done" }]);
    expect(run).toMatchObject({ stopReason: "complete", stats: { inputTokens: 220, outputTokens: 20 } });
  });

  it("Mistral: a tool call without any index, finished in the same chunk that carries the usage", async () => {
    const { s, run, messages } = await runOnce([
      recorded("mistral-tool-call-without-index.chunks.txt"),
      { text: "done" },
    ]);
    expect(run).toMatchObject({ stopReason: "complete", stats: { inputTokens: 134, outputTokens: 27 } });
    const call = { id: "gSIMJiOkT", name: "weather", input: '{"location": "San Francisco"}' };
    expect(messages[1]).toMatchObject({ role: "assistant", content: "", toolCalls: [call] });
    expect(sent(s, 1)[1].tool_calls).toEqual([
      { id: call.id, type: "function", function: { name: call.name, arguments: call.input } },
    ]);
  });

  it("parallel calls sharing index 0 with different ids stay two calls, each with its own arguments (constructed stream)", async () => {
    const { s, messages } = await runOnce([recorded("constructed-ollama-shared-index.sse"), { text: "done" }], {
      approval: { tools: { write_file: "deny" } },
    });
    const calls = [
      { id: "call_gx0zk1t6", name: "write_file", input: '{"path":"hello.py","content":"print(\\"hello\\")"}' },
      { id: "call_m3c9wq2e", name: "write_file", input: '{"path":"world.py","content":"print(\\"world\\")"}' },
    ];
    expect(messages[1]).toMatchObject({ role: "assistant", toolCalls: calls });
    expect(messages.slice(2, 4).map((m: { toolCallId: string }) => m.toolCallId)).toEqual(calls.map((c) => c.id));
    expect(sent(s, 1)[1].tool_calls.map((c: { function: { arguments: string } }) => c.function.arguments)).toEqual(
      calls.map((c) => c.input),
    );
  });

  it("Gemini 2.5: two calls without any index in one chunk stay two calls, each with its own id and arguments", async () => {
    const { s, run, messages } = await runOnce([
      recorded("gemini-2.5-flash-lite-parallel-calls-without-index.sse"),
      { text: "done" },
    ]);
    expect(run).toMatchObject({ stopReason: "complete", stats: { modelCalls: 2 } });
    const calls = [
      { id: "function-call-7026415214984972976", name: "get_weather", input: '{"city":"Seoul"}' },
      { id: "function-call-7026415214984972901", name: "get_weather", input: '{"city":"Oslo"}' },
    ];
    expect(messages[1]).toMatchObject({ role: "assistant", content: "", toolCalls: calls });
    expect(messages.slice(2, 4).map((m: { toolCallId: string }) => m.toolCallId)).toEqual(calls.map((c) => c.id));
    // Gemini 2.5 signs nothing: the calls go back bare.
    expect(sent(s, 1)[1].tool_calls).toEqual(
      calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.input } })),
    );
  });

  it("Gemini 3.1: calls without index in separate chunks, ended by finish_reason stop; the first call's thought signature is stored and sent back with it alone", async () => {
    const { s, run, messages } = await runOnce(
      [recorded("gemini-3.1-flash-lite-signed-calls-without-index.sse"), { text: "done" }],
      { model: "gemini-3.1-flash-lite" },
    );
    expect(run).toMatchObject({ stopReason: "complete", stats: { modelCalls: 2 } });
    const assistant = messages[1];
    const calls = [
      { id: "call_272732", name: "get_weather", input: '{"city":"Seoul"}' },
      { id: "call_272740", name: "get_weather", input: '{"city":"Oslo"}' },
    ];
    expect(assistant).toMatchObject({ role: "assistant", content: "", toolCalls: calls });
    const signature = { google: { thought_signature: "EnEKbwERTTIP0Zk3tjLvi9mRksxP" } };
    expect(assistant.metadata).toEqual({ toolCallFields: { call_272732: { extra_content: signature } } });

    const back = sent(s, 1)[1];
    expect(back.tool_calls).toEqual([
      {
        id: "call_272732",
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Seoul"}' },
        extra_content: signature,
      },
      { id: "call_272740", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
    ]);
    // No tool schema carries `$schema`, which Gemini's function declarations refuse.
    for (const request of s.upstream.requests) {
      for (const tool of request.body.tools) expect(tool.function.parameters).not.toHaveProperty("$schema");
    }
  });

  it("Gemini: calls without index and with empty ids get ids of their own; the thought signature is stored and sent back (constructed stream: no public recording has two calls with empty ids)", async () => {
    const { s, run, messages } = await runOnce([recorded("constructed-gemini-indexless-calls.sse"), { text: "done" }], {
      model: "gemini-3-flash-preview",
    });
    expect(run).toMatchObject({ stopReason: "complete", stats: { toolCalls: 2 } });
    const assistant = messages[1];
    expect(assistant.toolCalls.map((c: { name: string; input: string }) => [c.name, c.input])).toEqual([
      ["read_file", '{"path":"a.txt"}'],
      ["read_file", '{"path":"b.txt"}'],
    ]);
    const [first, second] = assistant.toolCalls.map((c: { id: string }) => c.id);
    expect(first).not.toBe(second);
    const signature = { google: { thought_signature: expect.stringMatching(/^EjQK/) } };
    expect(assistant.metadata).toEqual({ toolCallFields: { [first]: { extra_content: signature } } });
    expect(assistant.content).toBe("");

    const back = sent(s, 1)[1];
    expect(back.tool_calls[0]).toEqual({
      id: first,
      type: "function",
      function: { name: "read_file", arguments: '{"path":"a.txt"}' },
      extra_content: signature,
    });
    expect(back.tool_calls[1]).not.toHaveProperty("extra_content");
    // No tool schema carries `$schema`, which Gemini's function declarations refuse.
    for (const request of s.upstream.requests) {
      for (const tool of request.body.tools) expect(tool.function.parameters).not.toHaveProperty("$schema");
    }
  });

  it("Gemini 2.5 Pro: text, then a call without index and with an empty id; the call gets an id of its own, its result and the next request use it", async () => {
    const { s, run, messages } = await runOnce([
      recorded("gemini-2.5-pro-empty-id-call-without-index.sse"),
      { text: "done" },
    ]);
    expect(run).toMatchObject({ stopReason: "complete", error: null, stats: { modelCalls: 2 } });
    const assistant = messages[1];
    expect(assistant).toMatchObject({
      role: "assistant",
      content:
        "Okay, I will help you refine your `README.md`. To do this effectively, I need to analyze the content of both your `README.md` and the core header file `include/argparse/argparse.hpp`.\n\nPlease provide the content of these two files. I'll start by reading them.",
    });
    expect(assistant.toolCalls).toHaveLength(1);
    const [call] = assistant.toolCalls;
    expect(call).toMatchObject({
      name: "read_multiple_files",
      input: '{"paths":["README.md","include/argparse/argparse.hpp"]}',
    });
    expect(call.id).toMatch(/^call_[0-9a-f]{32}$/);
    // Gemini 2.5 signs nothing and sent no reasoning: no provider state to keep.
    expect(assistant.metadata ?? {}).toEqual({});
    // The tool is not one of the session's: its result is a failure value, answering the new id.
    expect(messages[2]).toMatchObject({ role: "tool", toolCallId: call.id });
    expect(messages[2].content).toMatch(/^unknown tool "read_multiple_files"/);

    // The next request carries the call under its new id, and the result answers that id.
    const back = sent(s, 1);
    expect(back[1]).toMatchObject({
      role: "assistant",
      tool_calls: [{ id: call.id, type: "function", function: { name: call.name, arguments: call.input } }],
    });
    expect(back[1].tool_calls[0]).not.toHaveProperty("extra_content");
    expect(back[2]).toMatchObject({ role: "tool", tool_call_id: call.id });
  });

  it("DeepSeek thinking mode: the reasoning of an assistant message with tool calls goes back as reasoning_content", async () => {
    const { s, run, messages } = await runOnce(
      [recorded("deepseek-reasoner-thinking-tool-call.chunks.txt"), { text: "done" }],
      {
        model: "deepseek-reasoner",
      },
    );
    expect(run).toMatchObject({ stopReason: "complete", stats: { inputTokens: 349, outputTokens: 88 } });
    const assistant = messages[1];
    expect(assistant).toMatchObject({
      content: "",
      toolCalls: [{ name: "weather", input: '{"location": "San Francisco"}' }],
    });
    expect(assistant.metadata.reasoning).toMatch(/^The user .*weather/s);
    expect(sent(s, 1)[1]).toMatchObject({
      role: "assistant",
      content: null,
      reasoning_content: assistant.metadata.reasoning,
    });
  });

  it("DeepSeek thinking mode: the answer after the tool results sends its reasoning back too, and a message that stored none sends it empty", async () => {
    // DeepSeek answers 400 ("The `reasoning_content` in the thinking mode must be passed back")
    // when any assistant message between two user messages where a tool was called lacks it.
    const answer = (reasoning: string | null, content: string) => ({
      raw: [
        `data: ${JSON.stringify({ id: "d", object: "chat.completion.chunk", model: "deepseek-reasoner", choices: [{ index: 0, delta: { role: "assistant", content: null, reasoning_content: reasoning }, finish_reason: null }] })}\n\n`,
        `data: ${JSON.stringify({ id: "d", object: "chat.completion.chunk", model: "deepseek-reasoner", choices: [{ index: 0, delta: { content, reasoning_content: null }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } })}\n\n`,
        "data: [DONE]\n\n",
      ],
    });
    const { s, sessionId, messages } = await runOnce(
      [recorded("deepseek-reasoner-thinking-tool-call.chunks.txt"), answer("The tool said sunny.", "done")],
      { model: "deepseek-reasoner" },
    );
    expect(messages[3]).toMatchObject({
      role: "assistant",
      content: "done",
      metadata: { reasoning: "The tool said sunny." },
    });
    s.upstream.enqueue(answer(null, "ok"));
    await s.request("POST", `/sessions/${sessionId}/runs?wait=true`, { body: { input: "thanks" } });
    s.upstream.enqueue({ text: "fine" });
    await s.request("POST", `/sessions/${sessionId}/runs?wait=true`, { body: { input: "and then?" } });
    const history = sent(s, 3);
    expect(history.filter((m: { role: string }) => m.role === "assistant")).toEqual([
      expect.objectContaining({ reasoning_content: messages[1].metadata.reasoning, tool_calls: expect.any(Array) }),
      { role: "assistant", content: "done", reasoning_content: "The tool said sunny." },
      { role: "assistant", content: "ok", reasoning_content: "" },
    ]);
  });

  it("OPENAI_PROVIDER overrides detection: the same DeepSeek stream under `deepseek` (R1 rules) sends no reasoning_content", async () => {
    const { s, messages } = await runOnce(
      [recorded("deepseek-reasoner-thinking-tool-call.chunks.txt"), { text: "done" }],
      {
        model: "deepseek-reasoner",
        env: { OPENAI_PROVIDER: "deepseek" },
      },
    );
    expect(messages[1].metadata.reasoning).toMatch(/^The user/);
    expect(sent(s, 1)[1]).not.toHaveProperty("reasoning_content");
  });

  it("a session's providerProfile wins over OPENAI_PROVIDER and detection; a name that is not a profile is 400", async () => {
    const { s, sessionId, messages } = await runOnce(
      [recorded("deepseek-reasoner-thinking-tool-call.chunks.txt"), { text: "done" }],
      { model: "team-model", env: { OPENAI_PROVIDER: "openai" }, providerProfile: "deepseek-thinking" },
    );
    expect(sent(s, 1)[1].reasoning_content).toBe(messages[1].metadata.reasoning);
    expect((await s.request("GET", `/sessions/${sessionId}`)).body.providerProfile).toBe("deepseek-thinking");
    const bad = await s.request("POST", "/sessions", { body: { providerProfile: "anthropic" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("VALIDATION_FAILED");
  });

  it("OpenAI: a refusal is committed as the content with metadata.refusal, and shown as such", async () => {
    const { run, text, messages } = await runOnce([recorded("openai-gpt-4o-refusal.sse")]);
    expect(run).toMatchObject({ stopReason: "complete", stats: { inputTokens: 79, outputTokens: 12 } });
    expect(text).toBe("I'm very sorry, but I can't assist with that.");
    expect(messages.at(-1)).toMatchObject({ role: "assistant", content: text, metadata: { refusal: true } });
  });

  it("reasoning.delta events go only to clients that ask (?reasoning=true); the others see their seqs skipped", async () => {
    const { s, run, messages } = await runOnce([recorded("mistral-small-mixed-content-parts.chunks.txt")]);
    const plain = await (await openSse(`${s.url}/runs/${run.id}/events`)).ended;
    const asked = await (await openSse(`${s.url}/runs/${run.id}/events?reasoning=true`)).ended;
    expect(plain.map((e) => e.event)).not.toContain("reasoning.delta");
    const reasoning = asked.filter((e) => e.event === "reasoning.delta");
    expect(reasoning.map((e) => e.json.text).join("")).toBe(messages.at(-1).metadata.reasoning);
    expect(asked.length).toBe(plain.length + reasoning.length);
    expect(plain.map((e) => e.json.type)).toEqual(
      asked.filter((e) => e.event !== "reasoning.delta").map((e) => e.json.type),
    );

    // The run's own stream (POST with Accept: text/event-stream) takes the same flag.
    s.upstream.enqueue(recorded("magistral-thinking-parts.chunks.txt"));
    const own = await openSse(`${s.url}/sessions/${run.sessionId}/runs?reasoning=true`, {
      method: "POST",
      body: { input: "2+2?" },
    });
    const ownEvents = await own.ended;
    expect(
      ownEvents
        .filter((e) => e.event === "reasoning.delta")
        .map((e) => e.json.text)
        .join(""),
    ).toBe("The user is asking for 2+2. This is basic arithmetic. 2+2=4.");
  });
});
