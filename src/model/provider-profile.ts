/**
 * Provider profiles: what each OpenAI-compatible provider needs to see again of what it
 * returned (stored in an assistant message's `metadata`, never in its content), and so what
 * is sent back to it. Everything a profile does not list is stripped: it never reaches the
 * wire. The stream is read the same way for every provider (see stream-assembler.ts); only
 * what is sent differs.
 */
import { isProfileName, PROVIDER_PROFILES, type ProviderProfileName } from "../domain/provider-profile-name.js";

export { isProfileName, PROVIDER_PROFILES, type ProviderProfileName };

export interface ProviderProfile {
  name: ProviderProfileName;
  /**
   * The field of every assistant message that carries its stored reasoning back ("" when it
   * stored none): DeepSeek's thinking mode answers 400 when the reasoning of any assistant
   * message between two user messages where a tool was called is missing, the final answer
   * after the tool results included, and ignores it elsewhere. null: reasoning is never sent
   * (older DeepSeek R1 refuses `reasoning_content` in a request).
   */
  reasoningField: "reasoning_content" | null;
  /** The fields kept beside each tool call and sent back with it (Gemini 3's `extra_content`). */
  toolCallFields: readonly string[];
  /**
   * Whether each assistant message carries its stored reasoning blocks back as
   * `reasoning_details` (OpenRouter: Gemini 3 refuses a tool call's result without its
   * signed reasoning; Claude and OpenAI's reasoning models go on from theirs).
   */
  reasoningDetails: boolean;
}

/** Whether `profile` sends back anything of an assistant message beyond its text and calls. */
export const sendsBack = (profile: ProviderProfile): boolean =>
  profile.reasoningField !== null || profile.toolCallFields.length > 0 || profile.reasoningDetails;

/** The table: one row per profile. */
const TABLE: Record<ProviderProfileName, Omit<ProviderProfile, "name">> = {
  openai: { reasoningField: null, toolCallFields: [], reasoningDetails: false },
  deepseek: { reasoningField: null, toolCallFields: [], reasoningDetails: false },
  "deepseek-thinking": { reasoningField: "reasoning_content", toolCallFields: [], reasoningDetails: false },
  gemini: { reasoningField: null, toolCallFields: ["extra_content"], reasoningDetails: false },
  openrouter: { reasoningField: null, toolCallFields: [], reasoningDetails: true },
};

export function profileNamed(name: ProviderProfileName): ProviderProfile {
  return { name, ...TABLE[name] };
}

/**
 * OPENAI_PROVIDER parsed: one profile for every model (`gemini`), or one per model name
 * (`my-proxy-alias=gemini,r1=deepseek`, with `*=…` for the models not listed). Models it
 * does not cover are detected.
 */
export interface ProviderSetting {
  byModel: Record<string, ProviderProfileName>;
  other?: ProviderProfileName;
}

/** Parses an OPENAI_PROVIDER value; a string naming the first problem when it is not one. */
export function parseProviderSetting(value: string): ProviderSetting | string {
  // No prototype: a model named `constructor` or `__proto__` is a key like any other.
  const setting: ProviderSetting = { byModel: Object.create(null) };
  const list = PROVIDER_PROFILES.join(", ");
  if (!value.includes("=")) {
    return isProfileName(value) ? { byModel: {}, other: value } : `must be one of ${list} (or model=profile pairs)`;
  }
  for (const pair of value.split(",")) {
    const at = pair.indexOf("=");
    const model = pair.slice(0, at).trim();
    const profile = pair.slice(at + 1).trim();
    if (at === -1 || model === "")
      return `must be model=profile pairs separated by commas, not ${JSON.stringify(pair)}`;
    if (!isProfileName(profile)) return `names ${JSON.stringify(profile)} for ${model}: a profile is one of ${list}`;
    const named = model === "*" ? setting.other !== undefined : Object.hasOwn(setting.byModel, model);
    if (named) return `names ${model} twice`;
    if (model === "*") setting.other = profile;
    else setting.byModel[model] = profile;
  }
  return setting;
}

/**
 * The profile for a request: the one its session names (`requested`, when it is a profile),
 * else what `configured` (OPENAI_PROVIDER) names for the model, else detected from the model
 * name and the base URL's host: OpenRouter's endpoint is `openrouter` (whatever the model);
 * Gemini models or Google's endpoint are `gemini`;
 * DeepSeek's thinking models (`deepseek-reasoner`, the V4 family) are `deepseek-thinking`,
 * other DeepSeek models (including R1 names) `deepseek`; anything else `openai`.
 */
export function resolveProfile({
  requested,
  configured,
  baseURL,
  model,
}: {
  requested?: string | undefined;
  configured: ProviderSetting | undefined;
  baseURL: string;
  model: string;
}): ProviderProfile {
  if (requested !== undefined && isProfileName(requested)) return profileNamed(requested);
  const named = configured
    ? Object.hasOwn(configured.byModel, model)
      ? configured.byModel[model]
      : configured.other
    : undefined;
  if (named) return profileNamed(named);
  const name = model.toLowerCase();
  const host = hostOf(baseURL);
  const leaf = name.slice(name.lastIndexOf("/") + 1);
  if (host === "openrouter.ai" || host.endsWith(".openrouter.ai")) return profileNamed("openrouter");
  if (host.endsWith("generativelanguage.googleapis.com") || leaf.startsWith("gemini-")) return profileNamed("gemini");
  if (host.endsWith("api.deepseek.com") || leaf.startsWith("deepseek")) {
    if (/\br1\b/.test(leaf)) return profileNamed("deepseek");
    if (leaf === "deepseek-reasoner" || leaf.startsWith("deepseek-v4")) return profileNamed("deepseek-thinking");
    return profileNamed("deepseek");
  }
  return profileNamed("openai");
}

/** The last base URL's host: a server has one base URL, and parsing it per model request costs. */
let lastHost: { baseURL: string; host: string } | null = null;

function hostOf(baseURL: string): string {
  if (lastHost?.baseURL === baseURL) return lastHost.host;
  let host = "";
  try {
    host = new URL(baseURL).hostname.toLowerCase();
  } catch {
    // Not a URL: no host to detect a provider from.
  }
  lastHost = { baseURL, host };
  return host;
}
