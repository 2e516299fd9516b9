import { z } from "zod";
import { type ProviderSetting, parseProviderSetting } from "./provider-profile.js";

/** The model settings read from the environment; every field is optional. */
export interface ModelConfig {
  /** The OpenAI-compatible API root, e.g. `https://api.openai.com/v1` (the client appends `/chat/completions`). */
  baseURL?: string;
  apiKey?: string;
  model?: string;
  /** OPENAI_PROVIDER: the provider profile, for every model or per model; detected for the models it does not name. */
  provider?: ProviderSetting;
}

export type ParseModelEnvResult = { ok: true; value: ModelConfig } | { ok: false; errors: string[] };

/** An unset or blank variable counts as absent; a set one is trimmed. */
const optionalSetting = z.preprocess((raw) => {
  if (typeof raw !== "string") return raw;
  const trimmed = raw.trim();
  return trimmed === "" ? undefined : trimmed;
}, z.string().optional());

/** The path suffix the SDK appends itself; a base URL that already has it would call `/chat/completions/chat/completions`. */
const COMPLETIONS_SUFFIX = /\/chat\/completions\/*$/;

const baseUrlSetting = optionalSetting.superRefine((value, ctx) => {
  if (value === undefined) return;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    ctx.addIssue({ code: "custom", message: "must be an http(s) URL such as https://api.openai.com/v1" });
    return;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    ctx.addIssue({ code: "custom", message: `must be an http(s) URL, not ${url.protocol}` });
    return;
  }
  // The client sends each request to the URL's origin and path: user info would be dropped
  // silently (and every run fail 401 at a basic-auth proxy). The message never echoes it.
  if (url.username !== "" || url.password !== "") {
    ctx.addIssue({
      code: "custom",
      message: "must not carry credentials (user:pass@): model requests do not send them",
    });
    return;
  }
  if (COMPLETIONS_SUFFIX.test(url.pathname)) {
    url.pathname = url.pathname.replace(COMPLETIONS_SUFFIX, "");
    ctx.addIssue({
      code: "custom",
      message: `must be the API root, not the endpoint: drop the /chat/completions suffix (e.g. ${url.toString()}); the client appends it`,
    });
  }
});

/** The zod schema of the model variables, keyed by variable name so issues name the variable. */
export const ModelEnvSchema = z.object({
  OPENAI_BASE_URL: baseUrlSetting,
  OPENAI_API_KEY: optionalSetting,
  OPENAI_MODEL: optionalSetting,
  OPENAI_PROVIDER: optionalSetting.transform((value, ctx) => {
    if (value === undefined) return undefined;
    const setting = parseProviderSetting(value);
    if (typeof setting === "string") {
      ctx.addIssue({ code: "custom", message: setting });
      return z.NEVER;
    }
    return setting;
  }),
});

/**
 * Reads `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL` and `OPENAI_PROVIDER` from `env`. Never throws:
 * invalid settings come back as `{ok:false, errors}`, each error starting with the
 * variable's name (e.g. "OPENAI_BASE_URL must be the API root, ..."). Errors never echo
 * the API key. Other variables in `env` are ignored.
 */
export function parseModelEnv(env: Record<string, string | undefined>): ParseModelEnvResult {
  const parsed = ModelEnvSchema.safeParse({
    OPENAI_BASE_URL: env.OPENAI_BASE_URL,
    OPENAI_API_KEY: env.OPENAI_API_KEY,
    OPENAI_MODEL: env.OPENAI_MODEL,
    OPENAI_PROVIDER: env.OPENAI_PROVIDER,
  });
  if (!parsed.success) {
    return {
      ok: false,
      errors: parsed.error.issues.map((issue) => `${issue.path.join(".") || "model settings"} ${issue.message}`),
    };
  }
  const { OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL, OPENAI_PROVIDER } = parsed.data;
  return {
    ok: true,
    value: {
      ...(OPENAI_BASE_URL !== undefined ? { baseURL: OPENAI_BASE_URL } : {}),
      ...(OPENAI_API_KEY !== undefined ? { apiKey: OPENAI_API_KEY } : {}),
      ...(OPENAI_MODEL !== undefined ? { model: OPENAI_MODEL } : {}),
      ...(OPENAI_PROVIDER !== undefined ? { provider: OPENAI_PROVIDER } : {}),
    },
  };
}

/**
 * Readiness: a model can be asked when there is a model name and somewhere to send it,
 * i.e. a base URL (a local server may need no key) or an API key (for the default
 * OpenAI endpoint).
 */
export function modelConfigured(cfg: ModelConfig): boolean {
  return Boolean(cfg.model) && Boolean(cfg.baseURL || cfg.apiKey);
}

/** Why {@link modelConfigured} is false, in words naming the variables to set; null when configured. */
export function modelNotConfiguredReason(cfg: ModelConfig): string | null {
  if (modelConfigured(cfg)) return null;
  const missing: string[] = [];
  if (!cfg.model) missing.push("OPENAI_MODEL");
  if (!cfg.baseURL && !cfg.apiKey) missing.push("OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs no key)");
  return `no model configured: set ${missing.join(" and ")}`;
}
