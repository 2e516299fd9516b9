import type { ModelClient } from "../agent/model.js";
import { type ModelConfig, modelNotConfiguredReason } from "./config.js";
import { notConfiguredModelClient } from "./not-configured.js";
import { createOpenAIModelClient, type OpenAIModelClientOptions } from "./openai-client.js";

/**
 * The client the server should use for `cfg` (from {@link parseModelEnv}): the real one
 * when {@link modelConfigured}, otherwise one that answers MODEL_NOT_CONFIGURED naming
 * the missing variables. `tuning` sets retries, timeouts, fetch and the secrets its error texts
 * never show.
 */
export function modelClientFromConfig(
  cfg: ModelConfig,
  tuning: Omit<OpenAIModelClientOptions, "baseURL" | "apiKey" | "model" | "providerProfile"> = {},
): ModelClient {
  const reason = modelNotConfiguredReason(cfg);
  if (reason !== null || !cfg.model) return notConfiguredModelClient(reason ?? "no model configured: set OPENAI_MODEL");
  return createOpenAIModelClient({
    ...tuning,
    baseURL: cfg.baseURL,
    apiKey: cfg.apiKey,
    model: cfg.model,
    providerProfile: cfg.provider,
  });
}
