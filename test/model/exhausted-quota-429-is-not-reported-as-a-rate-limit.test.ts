import { afterEach, describe, expect, it } from "vitest";
import { createOpenAIModelClient } from "../../src/model/openai-client.js";
import { type Harness, harness, type RawReply, sse } from "./raw-harness.js";
import { messageOf, request } from "./support.js";

/**
 * OpenAI answers HTTP 429 for two different things: a rate limit (`rate_limit_exceeded`: wait
 * and retry) and an account out of credit (`insufficient_quota`: "You exceeded your current
 * quota, please check your plan and billing details"), which no wait or retry ever fixes (every
 * new OpenAI key without billing hits it first; openai/codex#6340, langchainjs#1929 fixed the
 * same confusion). The server reports both the same way: error MODEL_RATE_LIMITED, "the
 * upstream rate-limited the request (HTTP 429) and retrying did not help", and a stopDetail
 * telling the person to "retry later or lower the request rate". (With the default
 * MODEL_MAX_RETRIES it also spends its retries, with backoff, on a request that cannot succeed.)
 *
 * Expected (product.md law 9, "a run reports why it stopped in words a person can act on";
 * README: stopDetail names "what to try"): an exhausted quota is not reported as a rate limit,
 * nor does its stopDetail advise retrying later or slowing down.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const quotaError = {
  message:
    "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
  type: "insufficient_quota",
  param: null,
  code: "insufficient_quota",
};
const quotaReply: RawReply = {
  status: 429,
  headers: { "content-type": "application/json" },
  writes: [JSON.stringify({ error: quotaError })],
};

describe("an upstream 429 whose error is insufficient_quota (the account is out of credit)", () => {
  it("is not reported as a rate limit to wait out", async () => {
    h = await harness([quotaReply]);
    const { run } = await h.run();
    expect(run.stopReason).toBe("error");
    expect(run.error.message).toContain("You exceeded your current quota");
    expect(run.error.code).not.toBe("MODEL_RATE_LIMITED");
    expect(run.error.message).not.toContain("rate-limited");
    expect(run.stopDetail).not.toMatch(/retry later|lower the request rate/i);
  });

  it("is MODEL_QUOTA_EXHAUSTED, asked once whatever MODEL_MAX_RETRIES, and points at the account's plan and billing", async () => {
    h = await harness([quotaReply, quotaReply, quotaReply], { MODEL_MAX_RETRIES: "2" });
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_QUOTA_EXHAUSTED");
    expect(h.requests).toHaveLength(1);
    expect(run.stopDetail).toContain("(MODEL_QUOTA_EXHAUSTED); check the model provider account's plan and billing");
  });

  it("is not retried through a fetch of the caller's own either (its body read from a clone)", async () => {
    h = await harness([quotaReply, quotaReply, quotaReply]);
    const client = createOpenAIModelClient({ baseURL: h.upstream.baseURL, model: "m", maxRetries: 2, fetch });
    const result = await client.complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_QUOTA_EXHAUSTED" });
    expect(messageOf(result)).toContain("You exceeded your current quota");
    expect(h.requests).toHaveLength(1);
  });

  it("reported mid-stream as an error chunk, is MODEL_QUOTA_EXHAUSTED too", async () => {
    h = await harness([{ writes: sse([{ error: quotaError }], { done: false }) }]);
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_QUOTA_EXHAUSTED");
    expect(run.error.message).toContain("mid-stream");
  });

  it("a 429 rate limit (rate_limit_exceeded) is still retried and reported as one", async () => {
    const rateLimited: RawReply = {
      status: 429,
      headers: { "content-type": "application/json", "retry-after-ms": "1" },
      writes: [
        JSON.stringify({ error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } }),
      ],
    };
    h = await harness([rateLimited, rateLimited], { MODEL_MAX_RETRIES: "1" });
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_RATE_LIMITED");
    expect(h.requests).toHaveLength(2);
  });
});
