import type http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { FINISH_GRACE_MS } from "../../src/model/client-settings.js";
import { createOpenAIModelClient } from "../../src/model/openai-client.js";
import { guardRequest } from "../../src/model/request-guard.js";
import { type RawUpstream, startRawUpstream } from "../helpers/raw-upstream.js";
import { sse } from "./raw-harness.js";
import { request } from "./support.js";

/**
 * The client against an upstream that sends a reply up to its finish_reason and then holds the
 * connection open, sending nothing more (a gateway holding back the usage chunk or `[DONE]`):
 * no output came after the finish_reason's chunk, so the reply is whole and the stream ends
 * cleanly once FINISH_GRACE_MS (or the idle timeout, when shorter) passed, and the held
 * connection is closed. Only the caller's abort still fails it.
 */
let upstream: RawUpstream | undefined;
afterEach(() => {
  upstream?.close();
  upstream = undefined;
});

/** An upstream writing `chunks` (no `[DONE]`) and then holding the connection; `closed` settles once the client closed it. */
async function holdingUpstream(chunks: unknown[]): Promise<{ baseURL: string; closed: Promise<void> }> {
  let onClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    onClosed = resolve;
  });
  upstream = await startRawUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const write of sse(chunks, { done: false })) res.write(write);
      res.on("close", onClosed);
    });
  });
  return { baseURL: upstream.baseURL, closed };
}

const client = (baseURL: string, idleTimeoutMs: number) =>
  createOpenAIModelClient({ baseURL, model: "m", maxRetries: 0, idleTimeoutMs });

describe("a reply whose finish_reason arrived, the upstream then silent", () => {
  it(`is kept with the usage that came, after FINISH_GRACE_MS (${FINISH_GRACE_MS} ms) however long the idle timeout, and its connection is closed`, async () => {
    const { baseURL, closed } = await holdingUpstream([
      { choices: [{ index: 0, delta: { role: "assistant", content: "The answer." }, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 4 } },
    ]);
    const result = await client(baseURL, 600_000).complete(request());
    expect(result).toMatchObject({
      ok: true,
      text: "The answer.",
      finishReason: "stop",
      usage: { inputTokens: 3, outputTokens: 4 },
    });
    await closed;
  });

  it("is kept with zero usage, as a stream that ends without a usage chunk is, when none came", async () => {
    const { baseURL, closed } = await holdingUpstream([
      { choices: [{ index: 0, delta: { role: "assistant", content: "Short." }, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    ]);
    const result = await client(baseURL, 200).complete(request());
    expect(result).toMatchObject({
      ok: true,
      text: "Short.",
      finishReason: "stop",
      usage: { inputTokens: 0, outputTokens: 0 },
    });
    await closed;
  });

  it("still fails MODEL_ABORTED when the caller aborts after the finish_reason", async () => {
    const { baseURL, closed } = await holdingUpstream([
      { choices: [{ index: 0, delta: { role: "assistant", content: "Cut." }, finish_reason: "stop" }] },
    ]);
    const controller = new AbortController();
    // The text and the finish_reason come in one chunk: the abort comes as it is read.
    const result = await client(baseURL, 600_000).complete(
      request({ signal: controller.signal, onTextDelta: () => controller.abort() }),
    );
    expect(result).toMatchObject({ ok: false, code: "MODEL_ABORTED" });
    await closed;
  });
});

describe("RequestGuard.shortenIdle", () => {
  it("stops the request (idle) after the shorter time, however long its idle timeout", async () => {
    const guard = guardRequest({ signal: new AbortController().signal, idleTimeoutMs: 600_000 });
    guard.touch();
    guard.shortenIdle(10);
    guard.touch();
    expect(await guard.stopped).toBe("idle");
    expect(guard.signal.aborted).toBe(true);
    guard.dispose();
  });
});
