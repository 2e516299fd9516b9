/** The only server environment variables a shell command sees (plus every LC_* locale variable). */
export const SHELL_ENV_ALLOWLIST: readonly string[] = ["PATH", "HOME", "LANG", "TERM", "TZ", "USER", "SHELL", "TMPDIR"];

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The environment of a shell command, built from an allow-list rather than by copying the
 * server's: API keys and every other configured value (OPENAI_API_KEY, AGENT_API_KEYS, …)
 * never reach the command. PATH falls back to a standard one when the server has none.
 */
export function shellEnvironment(source: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (SHELL_ENV_ALLOWLIST.includes(key) || key.startsWith("LC_")) env[key] = value;
  }
  env.PATH ??= DEFAULT_PATH;
  return env;
}
