import { afterEach, describe, expect, it } from "vitest";
import type { FakeReply } from "../fakes/openai-upstream.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/**
 * `contextMaxChars` counts what is sent back for a message under the session's provider
 * profile: OpenRouter's reasoning blocks (Gemini 3's and Claude's are signed or encrypted, several
 * KB each) go back with every later request, so they count; under a profile that does not send
 * them back they do not.
 */

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const BLOCK_CHARS = 6_000;
const LIMIT = 8_000;

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({
    id: "gen-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "google/gemini-3-pro-preview",
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;

/** A reply as OpenRouter streams Gemini 3's: an encrypted reasoning block of BLOCK_CHARS, then the text. */
function signedReply(text: string): FakeReply {
  const data = "Q".repeat(BLOCK_CHARS);
  return {
    raw: [
      chunk({
        role: "assistant",
        content: "",
        reasoning_details: [{ type: "reasoning.encrypted", data, format: "google-gemini-v1", index: 0 }],
      }),
      chunk({ content: text }),
      chunk({}, "stop"),
      `data: ${JSON.stringify({ id: "gen-1", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })}\n\n`,
      "data: [DONE]\n\n",
    ],
  };
}

// biome-ignore lint/suspicious/noExplicitAny: a request body as the upstream parsed it.
type Sent = any;

/** What a sent message costs by the documented count: content, arguments, and what is sent back beside them. */
function documentedCost(message: Sent): number {
  let chars = typeof message.content === "string" ? message.content.length : 0;
  for (const call of message.tool_calls ?? []) chars += call.function.arguments.length;
  if (message.reasoning_details) chars += JSON.stringify(message.reasoning_details).length;
  return chars;
}

/** Two runs whose replies carry a reasoning block each, then a third run with contextMaxChars LIMIT. */
async function thirdRequest(providerProfile?: string) {
  server = await startTestServer();
  const s = server;
  s.upstream.enqueue(signedReply("first"), signedReply("second"), { text: "ok" });
  const session = await s.request("POST", "/sessions", { body: providerProfile ? { providerProfile } : {} });
  const run = (body: Record<string, unknown>) =>
    s.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body });
  await run({ input: "one" });
  await run({ input: "two" });
  const third = await run({ input: "three", contextMaxChars: LIMIT });
  expect(third.body.run.stopReason).toBe("complete");
  s.upstream.assertComplete();
  const steps = await s.request("GET", `/runs/${third.body.run.id}/steps`);
  const messages: Sent[] = s.upstream.requests[2]?.body.messages;
  return { messages, bytes: Buffer.byteLength(JSON.stringify(messages)), context: steps.body.items[0].context };
}

describe("contextMaxChars and the reasoning blocks a profile sends back", () => {
  it("openrouter: the blocks count, so the third request stays within contextMaxChars (the oldest reply is trimmed)", async () => {
    const { messages, bytes, context } = await thirdRequest("openrouter");
    const cost = messages.reduce((sum, m) => sum + documentedCost(m), 0);
    expect(cost).toBeLessThanOrEqual(LIMIT);
    expect(bytes).toBeLessThan(LIMIT);
    // The newest reply goes with its block; the oldest reply (and the input before it) is not sent.
    expect(messages.map((m) => m.content)).toEqual(["two", "second", "three"]);
    expect(messages[1].reasoning_details[0].data).toHaveLength(BLOCK_CHARS);
    expect(context).toMatchObject({ messageCount: 3, trimmedCount: 2 });
  });

  it("openai: the blocks are not sent back, so they do not count: everything is sent", async () => {
    const { messages, context } = await thirdRequest();
    expect(messages.map((m) => m.content)).toEqual(["one", "first", "two", "second", "three"]);
    expect(messages.some((m) => "reasoning_details" in m)).toBe(false);
    expect(context).toMatchObject({ messageCount: 5, trimmedCount: 0 });
  });
});
