import { describe, expect, it } from "vitest";
import { parseModelEnv } from "../../src/model/config.js";
import { parseProviderSetting, resolveProfile } from "../../src/model/provider-profile.js";

/**
 * OPENAI_PROVIDER's pairs: `*` named twice was accepted (the last silently won) while any other
 * model named twice is refused, and a model named `constructor` or `toString` was refused as
 * named twice (the check read a plain object's prototype), `__proto__` lost its profile.
 */
describe("OPENAI_PROVIDER model=profile pairs", () => {
  it("refuses `*` named twice, as it refuses any other model named twice", () => {
    expect(parseProviderSetting("r1=deepseek,r1=openai")).toBe("names r1 twice");
    expect(parseProviderSetting("*=gemini,*=openai")).toBe("names * twice");
  });

  it("accepts a model whose name is an Object.prototype key (constructor, toString) named once", () => {
    const parsed = parseModelEnv({ OPENAI_PROVIDER: "constructor=gemini,toString=deepseek" });
    expect(parsed).toEqual({
      ok: true,
      value: { provider: { byModel: { constructor: "gemini", toString: "deepseek" } } },
    });
  });

  it("a model named __proto__ gets the profile OPENAI_PROVIDER names for it", () => {
    const setting = parseProviderSetting("__proto__=gemini");
    expect(typeof setting).not.toBe("string");
    if (typeof setting === "string") return;
    const profile = resolveProfile({ configured: setting, baseURL: "http://127.0.0.1:1/v1", model: "__proto__" });
    expect(profile.name).toBe("gemini");
  });
});
