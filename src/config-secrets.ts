import type { Config } from "./config.js";
import { databaseUrlPasswords } from "./display-database-url.js";

/**
 * Every secret of the configuration, which no log line and no error text quoting the model
 * upstream may show: each of AGENT_API_KEYS, OPENAI_API_KEY, STREAM_TOKEN_SECRET,
 * WEBHOOK_SECRET, and DATABASE_URL, whole and its password alone (as written and decoded).
 */
export function configSecrets(
  config: Pick<Config, "AGENT_API_KEYS" | "STREAM_TOKEN_SECRET" | "WEBHOOK_SECRET" | "DATABASE_URL" | "model">,
): string[] {
  return [
    ...config.AGENT_API_KEYS,
    config.model.apiKey ?? "",
    config.STREAM_TOKEN_SECRET ?? "",
    config.WEBHOOK_SECRET,
    ...(config.DATABASE_URL ? [config.DATABASE_URL, ...databaseUrlPasswords(config.DATABASE_URL)] : []),
  ].filter((secret) => secret !== "");
}
