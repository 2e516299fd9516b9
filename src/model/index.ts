export {
  type ModelConfig,
  ModelEnvSchema,
  modelConfigured,
  modelNotConfiguredReason,
  type ParseModelEnvResult,
  parseModelEnv,
} from "./config.js";
export { modelClientFromConfig } from "./from-config.js";
export { notConfiguredModelClient } from "./not-configured.js";
export {
  createOpenAIModelClient,
  DEFAULT_BASE_URL,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type ModelFetch,
  type OpenAIModelClientOptions,
} from "./openai-client.js";
