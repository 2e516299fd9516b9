import { describe, expect, it } from "vitest";
import { parseModelEnv } from "../../src/model/config.js";
import { resolveProfile } from "../../src/model/provider-profile.js";

const profileFor = (baseURL: string, model: string) => resolveProfile({ configured: undefined, baseURL, model }).name;

describe("provider profiles", () => {
  it("are detected from the base URL's host and the model name", () => {
    expect(profileFor("https://api.openai.com/v1", "gpt-4o")).toBe("openai");
    expect(profileFor("https://generativelanguage.googleapis.com/v1beta/openai", "anything")).toBe("gemini");
    expect(profileFor("http://127.0.0.1:4000/v1", "gemini-3-pro-preview")).toBe("gemini");
    expect(profileFor("https://api.deepseek.com", "deepseek-reasoner")).toBe("deepseek-thinking");
    expect(profileFor("http://127.0.0.1:4000/v1", "deepseek/deepseek-v4-flash")).toBe("deepseek-thinking");
    expect(profileFor("https://api.deepseek.com", "deepseek-chat")).toBe("deepseek");
    expect(profileFor("http://127.0.0.1:11434/v1", "deepseek-r1:14b")).toBe("deepseek");
    expect(profileFor("not a url", "llama3")).toBe("openai");
    // OpenRouter's endpoint whatever the model, a Gemini one included.
    expect(profileFor("https://openrouter.ai/api/v1", "google/gemini-3-pro-preview")).toBe("openrouter");
    expect(profileFor("https://eu.openrouter.ai/api/v1", "anthropic/claude-sonnet-4")).toBe("openrouter");
    expect(profileFor("https://openrouter.ai.example.com/v1", "gpt-4o")).toBe("openai");
  });

  it("OPENAI_PROVIDER wins over detection, and a value that is not a profile is refused naming the variable", () => {
    expect(
      resolveProfile({
        configured: { byModel: {}, other: "openai" },
        baseURL: "https://api.deepseek.com",
        model: "deepseek-reasoner",
      }),
    ).toEqual({ name: "openai", reasoningField: null, toolCallFields: [], reasoningDetails: false });
    expect(parseModelEnv({ OPENAI_PROVIDER: " gemini " })).toEqual({
      ok: true,
      value: { provider: { byModel: {}, other: "gemini" } },
    });
    const bad = parseModelEnv({ OPENAI_PROVIDER: "anthropic" });
    expect(bad.ok).toBe(false);
    expect(bad.ok ? [] : bad.errors).toEqual([
      expect.stringMatching(/^OPENAI_PROVIDER must be one of openai, deepseek, deepseek-thinking, gemini, openrouter/),
    ]);
  });
});
