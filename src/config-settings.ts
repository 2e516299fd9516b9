import { z } from "zod";

// The zod parts every setting of the server's environment is made of (see config.ts).

/** The longest delay a Node timer takes; a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The longest keep-alive timeout Node's HTTP server can arm: it waits that long plus its
 * keepAliveTimeoutBuffer (1000 ms) on each idle connection, in one timer.
 */
export const MAX_KEEP_ALIVE_MS = MAX_TIMER_MS - 1_000;

/** The largest budget a run stores (a 32-bit integer column over PostgreSQL): `maxTokens`, `contextMaxChars`. */
export const MAX_STORED_BUDGET = 2_147_483_647;

/** A whole number written in decimal digits (no sign, exponent, hex or fraction), else NaN. */
const decimal = (raw: string): number => (/^\d{1,16}$/.test(raw) ? Number(raw) : Number.NaN);

const wholeNumber = ({ min = 0, max = Number.MAX_SAFE_INTEGER } = {}) =>
  z
    .number({
      error: (issue) => (issue.code === "invalid_type" ? "must be a whole number in decimal digits" : undefined),
    })
    .int()
    .min(min)
    .max(max);
const toNumber = (raw: unknown) => (typeof raw === "string" && raw.trim() !== "" ? decimal(raw.trim()) : undefined);

export const intSetting = (fallback: number, bounds: { min?: number; max?: number } = {}) =>
  z.preprocess(toNumber, wholeNumber(bounds).default(fallback));

/** A number that may be left unset: no such limit, or a default that depends on other settings (see loadConfig). */
export const optionalIntSetting = (bounds: { min?: number; max?: number } = {}) =>
  z.preprocess(toNumber, wholeNumber(bounds).optional());

/** A duration in milliseconds that a timer can hold. */
export const msSetting = (fallback: number, { min = 1, max = MAX_TIMER_MS } = {}) => intSetting(fallback, { min, max });

/**
 * Why `value` is not exactly an origin as a browser sends it in `Origin` (`scheme://host[:port]`,
 * http or https, lower-case, no default port, path or trailing slash: an allowed origin is
 * compared byte for byte), in words that quote it (credentials in it masked) and say what is
 * wrong; null when it is one.
 */
export function originProblem(value: string): string | null {
  // Quoted without the credentials it may carry (up to its last "@": a password may hold
  // "/", "?" or "#"): the refusal is printed, and logged.
  const quoted = JSON.stringify(value.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/is, "$1***@"));
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    return `${quoted} is not an origin: write scheme://host[:port] (http or https, no path or trailing slash), or *`;
  }
  if (url.origin === value) return null;
  const [, scheme = "", authority = "", rest = ""] = /^([^:]*):\/\/([^/?#]*)(.*)$/s.exec(value) ?? [];
  const host = authority.replace(/^.*@/, "");
  const reasons: string[] = [];
  if (/[A-Z]/.test(scheme) || /[A-Z]/.test(host)) reasons.push("upper-case letters in the scheme or host");
  if (url.port === "" && /:\d+$/.test(host.replace(/^.*\]/, ""))) {
    reasons.push(`${url.protocol === "https:" ? "https's default port 443" : "http's default port 80"} written out`);
  }
  if (rest !== "") reasons.push("a path, query or trailing slash");
  if (host !== authority) reasons.push("credentials (user@)");
  const why = reasons.length > 0 ? reasons.join("; ") : "not the form browsers send";
  return `${quoted} is not an origin as browsers send it: ${why}; write ${JSON.stringify(url.origin)}`;
}

/** Whether `value` is a connection URL node-postgres takes (`postgres://` or `postgresql://`). */
export const isPostgresUrl = (value: string): boolean => /^postgres(ql)?:\/\/\S*$/.test(value);

export const stringSetting = (fallback: string) =>
  z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z.string().default(fallback),
  );

/** One of `values` (surrounding blanks ignored), `fallback` when unset or blank. */
export const choiceSetting = <const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) =>
  z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z.enum(values).default(fallback as never),
  );

/** A comma-separated list (surrounding blanks ignored); empty entries are dropped, unset or blank is empty. */
export const listSetting = z.preprocess(
  (raw) =>
    typeof raw === "string"
      ? raw
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean)
      : [],
  z.array(z.string()),
);

/**
 * A comma-separated list whose entries must all be there: unset or blank is empty, but a set
 * value with an empty entry (`,`, `a,,b`, a trailing comma: what `$A,$B` becomes when a
 * variable is missing) is refused, not read as fewer entries (for AGENT_API_KEYS, as none).
 */
export const completeListSetting = z.preprocess(
  (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.split(",").map((s) => s.trim()) : []),
  z.array(z.string()).refine((entries) => !entries.includes(""), {
    error:
      "has an empty entry (a stray comma, or a variable missing from the value it was built from): " +
      "give every entry, or leave the variable unset",
    abort: true,
  }),
);
