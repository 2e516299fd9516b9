import { MAX_ANSWER_BYTES } from "./bounded-read.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";

/** The server the client talks to, from `AGENT_URL` and `AGENT_API_KEY`. */
export interface Target {
  /** `AGENT_URL` without a trailing slash: paths are appended to it (a prefix behind a proxy is kept). */
  baseUrl: string;
  apiKey: string | null;
}

export const DEFAULT_AGENT_URL = "http://127.0.0.1:3000";

const configError = (message: string): CliError => new CliError(message, EXIT.config);

/**
 * AGENT_URL as an error may quote it: what lies between `//` and its last `@` (a user name and
 * password, however the URL parses, or does not) shown as `***`.
 */
function shown(raw: string): string {
  const start = /^[a-z][a-z0-9+.-]*:\/\//i.exec(raw)?.[0].length ?? 0;
  const at = raw.lastIndexOf("@");
  return at >= start ? `${raw.slice(0, start)}***${raw.slice(at)}` : raw;
}

/** Reads and checks the two variables; a value that cannot be used is a config `CliError`. */
export function targetFromEnv(env: NodeJS.ProcessEnv): Target {
  const raw = env.AGENT_URL?.trim() || DEFAULT_AGENT_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw configError(`AGENT_URL is not a URL: "${shown(raw)}" (set it like ${DEFAULT_AGENT_URL})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw configError(`AGENT_URL must be an http:// or https:// URL, not "${shown(raw)}"`);
  }
  if (url.username || url.password) {
    throw configError("AGENT_URL must not hold credentials: put the key in AGENT_API_KEY");
  }
  if (url.search || url.hash) {
    throw configError(
      `AGENT_URL must be the server's root, without ?query or #fragment: "${url.origin}${url.pathname}" followed by one`,
    );
  }
  const apiKey = env.AGENT_API_KEY?.trim() || null;
  if (apiKey !== null && !/^[\x21-\x7e]+$/.test(apiKey)) {
    throw configError("AGENT_API_KEY must be one key of visible ASCII characters, without spaces");
  }
  return { baseUrl: url.href.replace(/\/+$/, ""), apiKey };
}

/**
 * How much of one answer the client reads, in bytes (a JSON body) or characters (one event,
 * one turn's text): `AGENT_MAX_ANSWER_MIB` MiB, 1 to 4096, 128 by default.
 */
export function answerCapFromEnv(env: NodeJS.ProcessEnv): number {
  const raw = env.AGENT_MAX_ANSWER_MIB?.trim();
  if (!raw) return MAX_ANSWER_BYTES;
  const mib = /^\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(mib >= 1 && mib <= 4096)) {
    throw configError(`AGENT_MAX_ANSWER_MIB must be a whole number of MiB from 1 to 4096, not "${raw}"`);
  }
  return mib * 1024 * 1024;
}
