/**
 * An upstream's error text quotes the request, which may hold any secret of the server (a user
 * pasting a curl line with an agent key): the client replaces each secret it is given, besides
 * its own API key, by `[redacted]`, in every encoding secretRedactor knows.
 */
import { describe, expect, it } from "vitest";
import { createOpenAIModelClient } from "../../src/model/openai-client.js";
import { messageOf, request, TEST_API_KEY, upstream, useFakeUpstream } from "./support.js";

useFakeUpstream();

const AGENT_KEY = "tenant-key-0123456789abcdef";

describe("an upstream error quoting a secret of the server", () => {
  it.each([
    ["as written", `Bearer ${AGENT_KEY}`],
    ["in base64", Buffer.from(`Bearer ${AGENT_KEY}`).toString("base64")],
    ["%-encoded", encodeURIComponent(`k=${AGENT_KEY}`)],
  ])("shows it [redacted] (%s), as it does the API key", async (_name, quoted) => {
    upstream.enqueue({
      status: 400,
      errorBody: { error: { message: `Invalid content in messages[1]: '${quoted}' ${TEST_API_KEY}` } },
    });
    const client = createOpenAIModelClient({
      baseURL: upstream.baseURL,
      apiKey: TEST_API_KEY,
      model: "m",
      secrets: [AGENT_KEY],
    });
    const result = await client.complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
    expect(messageOf(result)).toMatch(/Invalid content in messages\[1\]: '.*\[redacted\].*' \[redacted\]$/);
    expect(messageOf(result)).not.toContain(AGENT_KEY);
    expect(messageOf(result)).not.toContain(encodeURIComponent(AGENT_KEY));
  });
});
