import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
  `data: ${JSON.stringify({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "fake-model",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  })}\n\n`;

const CAP = 10_000;
const BLOCK_TEXT = 100_000;

describe("reasoning_details whose text a one-character `reasoning` claims to carry (a malicious upstream)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { MODEL_MAX_OUTPUT_CHARS: String(CAP) } });
  });
  afterAll(() => server.close());

  const runStreaming = async (raw: string[]) => {
    server.upstream.enqueue({ raw });
    const session = (await server.request("POST", "/sessions", { body: {} })).body as { id: string };
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
    // Every message stored, page after page (a page holds at most 1 MiB).
    let stored = 0;
    for (let cursor: string | null = ""; cursor !== null; ) {
      const page = await server.request("GET", `/sessions/${session.id}/messages${cursor ? `?cursor=${cursor}` : ""}`);
      const body = page.body as { items: Array<{ role: string; metadata?: unknown }>; nextCursor: string | null };
      for (const m of body.items) if (m.role === "assistant") stored += JSON.stringify(m.metadata ?? {}).length;
      cursor = body.nextCursor;
    }
    return { run: waited.body.run as { stopReason: string; error?: { code: string } }, stored };
  };

  it("fragments of one block, each far larger than the cap: the reply is cut off, nothing of it kept", async () => {
    // Before, a block's text was not counted when the delta's `reasoning` was not empty, whatever
    // its length: 20 chunks of `reasoning: "x"` with 100,000 characters of block text each passed
    // a cap of 10,000 characters, and the 2 MB of reasoning were stored with the message.
    const raw = [
      ...Array.from({ length: 20 }, () =>
        chunk({
          reasoning: "x",
          reasoning_details: [{ type: "reasoning.text", index: 0, text: "r".repeat(BLOCK_TEXT) }],
        }),
      ),
      chunk({ content: "done" }),
      `${chunk({}, "stop")}data: [DONE]\n\n`,
    ];
    const { run, stored } = await runStreaming(raw);
    expect(stored).toBeLessThan(CAP);
    expect(run.stopReason).toBe("error");
    expect(run.error?.code).toBe("MODEL_OUTPUT_TOO_LARGE");
  });

  it('new blocks, two a delta beside `reasoning: "xx"`: the text the delta carries covers it once, not each block\'s', async () => {
    const raw = [
      ...Array.from({ length: 20 }, (_, i) =>
        chunk({
          reasoning: "xx",
          reasoning_details: [0, 1].map((k) => ({
            type: "reasoning.text",
            index: 2 * i + k,
            text: "r".repeat(BLOCK_TEXT / 2),
          })),
        }),
      ),
      chunk({ content: "done" }),
      `${chunk({}, "stop")}data: [DONE]\n\n`,
    ];
    const { run, stored } = await runStreaming(raw);
    expect(stored).toBeLessThan(CAP);
    expect(run.error?.code).toBe("MODEL_OUTPUT_TOO_LARGE");
  });
});
