import { describe, expect, it } from "vitest";
import { modelConfigured, modelNotConfiguredReason, parseModelEnv } from "../../src/model/config.js";
import { modelClientFromConfig } from "../../src/model/from-config.js";
import { notConfiguredModelClient } from "../../src/model/not-configured.js";
import { request } from "./support.js";

describe("model settings from the environment", () => {
  it("reads and trims the three variables; blank ones count as unset", () => {
    expect(
      parseModelEnv({
        OPENAI_BASE_URL: " http://localhost:11434/v1 ",
        OPENAI_API_KEY: "sk-abc\n",
        OPENAI_MODEL: "llama3",
        UNRELATED: "x",
      }),
    ).toEqual({ ok: true, value: { baseURL: "http://localhost:11434/v1", apiKey: "sk-abc", model: "llama3" } });
    expect(parseModelEnv({ OPENAI_BASE_URL: "", OPENAI_API_KEY: "  " })).toEqual({ ok: true, value: {} });
  });

  it.each(["https://api.example.com/v1/chat/completions", "https://api.example.com/v1/chat/completions/"])(
    "rejects a base URL ending in /chat/completions (%s), naming the variable and saying to drop the suffix",
    (url) => {
      const result = parseModelEnv({ OPENAI_BASE_URL: url });
      expect(result.ok).toBe(false);
      const errors = result.ok ? [] : result.errors;
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(/^OPENAI_BASE_URL /);
      expect(errors[0]).toContain("drop the /chat/completions suffix");
      expect(errors[0]).toContain("https://api.example.com/v1");
    },
  );

  it.each(["ftp://example.com/v1", "file:///etc/passwd", "localhost:8080/v1", "not a url"])(
    "rejects a base URL that is not http(s): %s",
    (url) => {
      const result = parseModelEnv({ OPENAI_BASE_URL: url });
      expect(result.ok).toBe(false);
      expect(result.ok ? [] : result.errors).toEqual([
        expect.stringMatching(/^OPENAI_BASE_URL must be an http\(s\) URL/),
      ]);
    },
  );

  it.each(["https://user:hunter2@proxy.example.com/v1", "https://user@proxy.example.com/v1"])(
    "rejects a base URL carrying credentials (%s), which requests would drop, without echoing them",
    (url) => {
      const result = parseModelEnv({ OPENAI_BASE_URL: url });
      expect(result.ok ? [] : result.errors).toEqual([
        "OPENAI_BASE_URL must not carry credentials (user:pass@): model requests do not send them",
      ]);
    },
  );

  it("does not echo the API key or URL credentials in errors", () => {
    const result = parseModelEnv({
      OPENAI_BASE_URL: "https://user:hunter2@api.example.com/v1/chat/completions",
      OPENAI_API_KEY: "sk-very-secret",
    });
    const text = JSON.stringify(result);
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("sk-very-secret");
  });

  it("is configured with a model and either a base URL or an API key", () => {
    expect(modelConfigured({ model: "m", apiKey: "k" })).toBe(true);
    expect(modelConfigured({ model: "m", baseURL: "http://localhost:1234/v1" })).toBe(true);
    expect(modelConfigured({ model: "m" })).toBe(false);
    expect(modelConfigured({ apiKey: "k", baseURL: "http://x/v1" })).toBe(false);
    expect(modelNotConfiguredReason({ apiKey: "k" })).toBe("no model configured: set OPENAI_MODEL");
    expect(modelNotConfiguredReason({ model: "m", apiKey: "k" })).toBeNull();
  });
});

describe("a server without a model", () => {
  it("answers every request with MODEL_NOT_CONFIGURED and the reason", async () => {
    const result = await notConfiguredModelClient("set OPENAI_MODEL").complete(request());
    expect(result).toEqual({
      ok: false,
      code: "MODEL_NOT_CONFIGURED",
      message: "set OPENAI_MODEL",
      timing: { latencyMs: 0, firstTokenMs: null },
    });
  });

  it("modelClientFromConfig picks the not-configured client when settings are missing", async () => {
    const result = await modelClientFromConfig({ apiKey: "k" }).complete(request());
    expect(result).toMatchObject({
      ok: false,
      code: "MODEL_NOT_CONFIGURED",
      message: expect.stringContaining("OPENAI_MODEL"),
    });
  });
});
