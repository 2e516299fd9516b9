import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness } from "./raw-harness.js";

/**
 * Gateways in front of a model (one-api style proxies, some Chinese providers' compatible
 * endpoints) answer a failed request with status 200 and a plain JSON error object instead of
 * an event stream. The server reads no chunk and reports MODEL_BAD_RESPONSE "check that
 * OPENAI_BASE_URL points to an OpenAI-compatible API root": the upstream's own explanation
 * (here: the context is too long) is dropped and the operator is sent to check a URL that is
 * right. A `{"error": ...}` chunk inside a stream is already reported with its message.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("an error object answered with 200 as plain JSON", () => {
  it("fails the run with the upstream's message", async () => {
    h = await harness([
      {
        headers: { "content-type": "application/json" },
        writes: [
          JSON.stringify({
            error: {
              message:
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
              type: "invalid_request_error",
              code: "context_length_exceeded",
            },
          }),
        ],
      },
    ]);
    const { run } = await h.run();
    expect(run.stopReason).toBe("error");
    expect(run.error.message).toContain("maximum context length is 8192 tokens");
    expect(run.error.code).toBe("MODEL_UPSTREAM");
  });

  it("a whole chat.completion (stream: true ignored) fails saying so", async () => {
    h = await harness([
      {
        headers: { "content-type": "application/json" },
        writes: [
          JSON.stringify({
            id: "c1",
            object: "chat.completion",
            choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
          }),
        ],
      },
    ]);
    const { run } = await h.run();
    expect(run.stopReason).toBe("error");
    expect(run.error).toMatchObject({ code: "MODEL_BAD_RESPONSE" });
    expect(run.error.message).toContain("ignored `stream: true`");
  });
});
