import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const chunk = (toolCalls: unknown[], finishReason: string | null = null) =>
  `data: ${JSON.stringify({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "fake-model",
    choices: [{ index: 0, delta: { tool_calls: toolCalls }, finish_reason: finishReason }],
  })}\n\n`;

/**
 * One call (an unknown tool), then one stream event of `count` fragments continuing it, each
 * with a provider field of its own beside `index` (where Gemini puts `extra_content`): ~12
 * characters a fragment, well within MODEL_MAX_OUTPUT_CHARS.
 */
function fieldFloodStream(count: number): string[] {
  const fragments = Array.from({ length: count }, (_, i) => ({ index: 0, [`x_${i}`]: 1 }));
  return [
    chunk([{ index: 0, id: "call_1", type: "function", function: { name: "nope", arguments: "{}" } }]),
    chunk(fragments),
    `${chunk([], "tool_calls")}data: [DONE]\n\n`,
  ];
}

describe("a model reply streaming a call's provider fields one fragment at a time (a malicious upstream)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("is assembled in linear time: the event loop is never held, the run goes on", async () => {
    // Before, each fragment copied every field merged so far: these 10,000 fragments (120 KB in
    // one event) held the event loop for ~60 s; now ~80 ms.
    const count = 10_000;
    server.upstream.enqueue({ raw: fieldFloodStream(count) }, { text: "done" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body as { id: string };
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "go" },
    });
    delay.disable();
    const { run } = waited.body as { run: { stopReason: string } };
    expect(run.stopReason).toBe("complete");
    const blockedMs = delay.max / 1e6;
    expect(blockedMs).toBeLessThan(1_000);
    // Every field was kept with the call, as the provider sent it.
    const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body as {
      items: Array<{ role: string; metadata?: { toolCallFields?: Record<string, Record<string, unknown>> } }>;
    };
    const assistant = messages.items.find((m) => m.role === "assistant");
    expect(Object.keys(assistant?.metadata?.toolCallFields?.call_1 ?? {})).toHaveLength(count);
  }, 120_000);
});
