/**
 * An upstream that answers HTTP 402 Payment Required because the provider account is out of
 * credit (DeepSeek: 402 "Insufficient Balance"; OpenRouter: 402 "Insufficient credits") is a
 * billing problem, exactly like OpenAI's 429 `insufficient_quota`, which this release reports as
 * MODEL_QUOTA_EXHAUSTED with the hint "check the model provider account's plan and billing".
 *
 * The new refusal hint (src/model/refusal-hint.ts) is attached to every 4xx but
 * 401/403/404/408/409/429, so a 402 gets: "the upstream refused the request as sent, and
 * retrying it unchanged will not help: change what its message names (the session's model,
 * tools or input)". A person following that advice edits the session's model, tools and input,
 * none of which is wrong; nothing says to look at the account's balance/billing.
 *
 * Expected (README: a run's stopDetail names "the cause and what to try"; product law 9: a run
 * reports why it stopped in words a person can act on): a 402 points at the provider account's
 * plan/billing (e.g. MODEL_QUOTA_EXHAUSTED or its hint), not at the session's model, tools or input.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness, type RawReply, sse } from "./raw-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("a model request answered 402 Payment Required (account out of credit)", () => {
  it("has a stopDetail pointing at the account's billing, not at the session's model, tools or input", async () => {
    h = await harness([
      {
        status: 402,
        headers: { "content-type": "application/json" },
        // DeepSeek's answer when the account's balance is used up.
        writes: [
          JSON.stringify({
            error: {
              message: "Insufficient Balance",
              type: "unknown_error",
              param: null,
              code: "invalid_request_error",
            },
          }),
        ],
      },
    ]);
    const { run } = await h.run();
    expect(run.stopReason).toBe("error");
    expect(run.error.message).toContain("Insufficient Balance");
    expect(h.requests).toHaveLength(1);
    expect(run.stopDetail).not.toMatch(/the session's model, tools or input/);
    expect(run.stopDetail).toMatch(/billing/i);
  });

  it("is MODEL_QUOTA_EXHAUSTED, asked once whatever MODEL_MAX_RETRIES (OpenRouter's 402 too)", async () => {
    const insufficientCredits: RawReply = {
      status: 402,
      headers: { "content-type": "application/json" },
      writes: [
        JSON.stringify({ error: { code: 402, message: "Insufficient credits. Add more using https://x/credits" } }),
      ],
    };
    h = await harness([insufficientCredits, insufficientCredits, insufficientCredits], { MODEL_MAX_RETRIES: "2" });
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_QUOTA_EXHAUSTED");
    expect(run.error.message).toMatch(/HTTP 402 because the account is out of credit: Insufficient credits/);
    expect(h.requests).toHaveLength(1);
    expect(run.stopDetail).toContain("(MODEL_QUOTA_EXHAUSTED); check the model provider account's plan and billing");
  });
});

describe("an answer not retried whose message says the account's credit is used up", () => {
  it("a 400 'Your credit balance is too low' (Anthropic-compatible) is MODEL_QUOTA_EXHAUSTED, pointing at billing", async () => {
    h = await harness([
      {
        status: 400,
        headers: { "content-type": "application/json" },
        writes: [
          JSON.stringify({
            type: "error",
            error: {
              type: "invalid_request_error",
              message:
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            },
          }),
        ],
      },
    ]);
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_QUOTA_EXHAUSTED");
    expect(h.requests).toHaveLength(1);
    expect(run.stopDetail).not.toMatch(/the session's model, tools or input/);
    expect(run.stopDetail).toMatch(/plan and billing/);
  });

  it("an error chunk mid-stream with code 402 (OpenRouter) is MODEL_QUOTA_EXHAUSTED", async () => {
    h = await harness([{ writes: sse([{ error: { code: 402, message: "Insufficient credits" } }], { done: false }) }]);
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_QUOTA_EXHAUSTED");
    expect(run.error.message).toContain("mid-stream because the account is out of credit");
  });

  it("a 400 about something else is still refused as sent, not a billing matter", async () => {
    h = await harness([
      {
        status: 400,
        headers: { "content-type": "application/json" },
        writes: [
          JSON.stringify({ error: { message: "Invalid value for 'temperature'", type: "invalid_request_error" } }),
        ],
      },
    ]);
    const { run } = await h.run();
    expect(run.error.code).toBe("MODEL_UPSTREAM");
    expect(run.stopDetail).toMatch(/the session's model, tools or input/);
    expect(run.stopDetail).not.toMatch(/billing/);
  });
});
