import { APIConnectionError } from "openai";
import { describe, expect, it } from "vitest";
import type { ModelResult } from "../../src/agent/model.js";
import { classifyError } from "../../src/model/classify-error.js";
import { dist, runUnderFileLimit } from "../helpers/file-limit-child.js";
import { upstream, useFakeUpstream } from "./support.js";

useFakeUpstream();

/**
 * A model request from a process that has used up its file descriptors (as a flood of
 * connections can make it): the built client over HTTP to the fake upstream, in a child that
 * holds every descriptor it may open before the request. `freeAfterFailure`: the client's
 * fetch (the real one) frees them once an attempt has failed, as a flood that passes would.
 * The child exits 0 only if nothing was left unhandled.
 */
async function completeWithoutDescriptors({ freeAfterFailure = false } = {}): Promise<{
  result: ModelResult;
  failedAttempts: number;
}> {
  const script = `
    import { closeSync, openSync } from "node:fs";
    import { createOpenAIModelClient } from ${dist("src/model/openai-client.js")};
    import { upstreamFetch } from ${dist("src/model/upstream-fetch.js")};
    const [baseURL, freeAfterFailure] = process.argv.slice(2);
    const held = [];
    try { for (;;) held.push(openSync("/dev/null", "r")); } catch (err) { if (err.code !== "EMFILE") throw err; }
    const heldAtStart = held.length;
    const free = () => { while (held.length > 0) closeSync(held.pop()); };
    let failedAttempts = 0;
    const client = createOpenAIModelClient({
      baseURL,
      model: "test-model",
      maxRetries: 1,
      fetch: async (input, init) => {
        try {
          return await upstreamFetch(input, init);
        } catch (err) {
          failedAttempts++;
          if (freeAfterFailure === "true") free();
          throw err;
        }
      },
    });
    const messages = [{ id: "u", role: "user", content: "hi" }];
    const result = await client.complete({ messages, tools: [], signal: new AbortController().signal });
    // Anything the request left to fail later (an 'error' event nobody listens to) fails here.
    await new Promise((resolve) => setTimeout(resolve, 100));
    process.stdout.write(JSON.stringify({ heldAtStart, failedAttempts, result }));
  `;
  const out = JSON.parse(await runUnderFileLimit(script, [upstream.baseURL, String(freeAfterFailure)]));
  expect(out.heldAtStart).toBeGreaterThan(0);
  return out;
}

describe("a model request from a process out of file descriptors", () => {
  it("fails MODEL_OUT_OF_DESCRIPTORS naming EMFILE, blaming neither the upstream nor OPENAI_BASE_URL", async () => {
    const { result, failedAttempts } = await completeWithoutDescriptors();
    expect(result).toMatchObject({ ok: false, code: "MODEL_OUT_OF_DESCRIPTORS" });
    const message = result.ok ? "" : result.message;
    expect(message).toMatch(/^the server has no file descriptor left to connect to the model upstream at .*\(EMFILE/);
    expect(message).not.toContain("OPENAI_BASE_URL");
    // Retried as the transient failure it is (maxRetries 1), and nothing reached the upstream.
    expect(failedAttempts).toBe(2);
    expect(message).toContain("2 attempts");
    expect(upstream.requests).toHaveLength(0);
  });

  it("is retried: once descriptors are free again, the next attempt succeeds", async () => {
    upstream.enqueue({ text: "hello" });
    const { result, failedAttempts } = await completeWithoutDescriptors({ freeAfterFailure: true });
    expect(result).toMatchObject({ ok: true, text: "hello" });
    expect(failedAttempts).toBe(1);
    expect(upstream.requests).toHaveLength(1);
  });

  it("the system's limit (ENFILE), under fetch's TypeError, is out of descriptors too", () => {
    const socketError = Object.assign(new Error("connect ENFILE 127.0.0.1:443"), { code: "ENFILE" });
    const error = new APIConnectionError({ cause: new TypeError("fetch failed", { cause: socketError }) });
    const context = {
      baseURL: "http://127.0.0.1/v1",
      model: "m",
      redactSecrets: (text: string) => text,
      maxRetries: 2,
      requestTimeoutMs: 1000,
      phase: "request" as const,
    };
    const failure = classifyError(error, context);
    expect(failure.code).toBe("MODEL_OUT_OF_DESCRIPTORS");
    expect(failure.message).toContain(
      "no file descriptor left to connect to the model upstream at http://127.0.0.1/v1 (ENFILE; 3 attempts): the system's processes hold too many",
    );
  });
});
