import type { Config } from "./config.js";
import { databaseUrlPasswords } from "./display-database-url.js";

/**
 * Every secret of the configuration, which no log line and no error text quoting the model
 * upstream may show: each of AGENT_API_KEYS, OPENAI_API_KEY, STREAM_TOKEN_SECRET,
 * WEBHOOK_SECRET, and DATABASE_URL, whole and its password alone (as written and decoded) when
 * that password cannot be an ordinary word or number (see secretAlone).
 */
export function configSecrets(
  config: Pick<Config, "AGENT_API_KEYS" | "STREAM_TOKEN_SECRET" | "WEBHOOK_SECRET" | "DATABASE_URL" | "model">,
): string[] {
  return [
    ...config.AGENT_API_KEYS,
    config.model.apiKey ?? "",
    config.STREAM_TOKEN_SECRET ?? "",
    config.WEBHOOK_SECRET,
    ...(config.DATABASE_URL
      ? [config.DATABASE_URL, ...databaseUrlPasswords(config.DATABASE_URL).filter(secretAlone)]
      : []),
  ].filter((secret) => secret !== "");
}

/** The fewest characters of a password redacted alone when it is all letters or all digits. */
const MIN_PLAIN_CHARS = 16;
/** The fewest characters of a password redacted alone. */
const MIN_CHARS = 8;

/**
 * Whether a database password is redacted alone, wherever it appears (in any letter case): only
 * when it cannot be an ordinary word or number of a log line, since it would be replaced there
 * too (`postgres` in every line naming the store, `12345678` inside ids and numbers written
 * in text; see secretRedactor for shorter ones). So at least MIN_PLAIN_CHARS characters, or at
 * least MIN_CHARS that are not all letters nor all digits. A shorter or plainer one is still
 * redacted as part of the whole URL.
 */
function secretAlone(password: string): boolean {
  const length = [...password].length;
  if (length >= MIN_PLAIN_CHARS) return true;
  return length >= MIN_CHARS && !/^\p{L}+$/u.test(password) && !/^\p{N}+$/u.test(password);
}
