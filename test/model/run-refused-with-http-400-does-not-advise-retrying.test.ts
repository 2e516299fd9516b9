import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness } from "./raw-harness.js";

/**
 * A run whose model request the upstream refuses as invalid (HTTP 400, the commonest case being
 * a conversation past the model's context window: OpenAI's `context_length_exceeded`) ends
 * `error` MODEL_UPSTREAM with the upstream's explanation, which is right. But its `stopDetail`,
 * the sentence README promises names "the cause and what to try", ends with the hint written
 * for a provider outage: "retry later; the model provider failed". Neither is true: the
 * provider answered, and the same request will be refused again however late it is retried
 * (the client itself does not retry a 400 for that reason). A person following the advice
 * retries the run for ever.
 *
 * Expected (product.md law 9: "a run reports why it stopped in words a person can act on";
 * README: stopDetail names "what to try"): a refused request (4xx other than auth, not-found,
 * timeout and rate limit) is not described as a provider failure to retry later.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("a run whose model request the upstream refuses with HTTP 400 (context too long)", () => {
  it("has a stopDetail that does not tell the user to retry later because the provider failed", async () => {
    h = await harness([
      {
        status: 400,
        headers: { "content-type": "application/json" },
        writes: [
          JSON.stringify({
            error: {
              message:
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
              type: "invalid_request_error",
              param: "messages",
              code: "context_length_exceeded",
            },
          }),
        ],
      },
    ]);
    const { run } = await h.run();
    expect(run.stopReason).toBe("error");
    expect(run.error.message).toContain("maximum context length is 128000 tokens");
    expect(h.requests).toHaveLength(1);
    expect(run.stopDetail).not.toMatch(/retry later/i);
    expect(run.stopDetail).not.toMatch(/the model provider failed/i);
  });

  it("names what to change: a lower contextMaxChars or a new session, since retrying it unchanged will not help", async () => {
    h = await harness([
      {
        status: 400,
        headers: { "content-type": "application/json" },
        writes: [
          JSON.stringify({ error: { message: "maximum context length exceeded", code: "context_length_exceeded" } }),
        ],
      },
    ]);
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_UPSTREAM");
    expect(run.stopDetail).toContain("retrying it unchanged will not help");
    expect(run.stopDetail).toContain("contextMaxChars");
    expect(run.stopDetail).toContain("new session");
  });

  it("a 400 about something else says retrying unchanged will not help, without blaming the context", async () => {
    h = await harness([
      {
        status: 400,
        headers: { "content-type": "application/json" },
        writes: [
          JSON.stringify({ error: { message: "Invalid schema for function 'shell'", type: "invalid_request_error" } }),
        ],
      },
    ]);
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_UPSTREAM");
    expect(run.stopDetail).toContain(
      "Invalid schema for function 'shell' (MODEL_UPSTREAM); the upstream refused the request as sent",
    );
    expect(run.stopDetail).toContain("retrying it unchanged will not help");
    expect(run.stopDetail).not.toContain("contextMaxChars");
  });

  it("a 5xx still says to retry later", async () => {
    h = await harness([
      {
        status: 503,
        headers: { "content-type": "application/json", "x-should-retry": "false" },
        writes: [JSON.stringify({ error: { message: "overloaded", type: "server_error" } })],
      },
    ]);
    const { run } = await h.run();
    expect(run.stopDetail).toMatch(/\(MODEL_UPSTREAM\); retry later; the model provider failed$/);
  });
});
