/**
 * Query parameters of a PostgreSQL connection URL shown in messages: they name where to connect
 * and how, never a secret. Every other one is left out (`password`, `sslpassword`, `sslkey`,
 * `sslcert`, `options`, and whatever a driver adds later).
 */
const SHOWN_PARAMETERS = new Set(["host", "port", "sslmode", "connect_timeout", "application_name"]);

/** Query parameters whose value is a password (libpq's and node-pg's `password`, libpq's `sslpassword`). */
const PASSWORD_PARAMETERS = new Set(["password", "sslpassword"]);

/** A URL's scheme with its `//`. */
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * Whether a `/`, `?` or `#` in the password of `url` may have cut its user info short, so that
 * where the user name and password end cannot be told from its text: the authority (up to the
 * first `/`, `?` or `#` after the scheme) has no `@` while a later part has one, or it has one
 * and a later `@` sits in the path or fragment. A password `2024/x` then parses as the port 2024
 * of the host the user name is, and the path `/x@host/db`; `p@ss/x` as the host `ss` and the
 * path `/x@host/db`. The driver connects as it parses, so its reasons may quote the password
 * too. An `@` in a query value after a user info (`?application_name=agent@eu-1`) is ordinary,
 * and so is any `@` when no `:` comes before the last one (there is no password to cut).
 */
export function ambiguousUserInfo(url: string): boolean {
  const rest = url.replace(SCHEME, "");
  const lastAt = rest.lastIndexOf("@");
  if (lastAt < 0 || !rest.slice(0, lastAt).includes(":")) return false;
  const end = rest.search(/[/?#]/);
  if (end < 0 || end > lastAt) return false;
  if (!rest.slice(0, end).includes("@")) return true;
  const later = rest.slice(end);
  const query = later.search(/[?#]/);
  const path = query < 0 ? later : later.slice(0, query);
  const hash = later.indexOf("#");
  return path.includes("@") || (hash >= 0 && later.slice(hash).includes("@"));
}

/**
 * A PostgreSQL connection URL fit for an error message or a log: user, host, port and database
 * as written, without the password, the fragment, or any query parameter that may carry a secret
 * (the text says when some were left out). A URL that does not parse, or whose user info is
 * ambiguous (see ambiguousUserInfo), shows nothing but its scheme (and only a postgres one):
 * where the user name and password end in it cannot be known.
 */
export function displayDatabaseUrl(url: string): string {
  const scheme = /^(postgres|postgresql):\/\//i.exec(url)?.[0] ?? "";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${scheme}(not shown: it cannot be parsed as a URL)`;
  }
  if (ambiguousUserInfo(url)) return `${scheme}(not shown: where its user name and password end cannot be told)`;
  const entries = [...parsed.searchParams];
  const kept = entries.filter(([name]) => SHOWN_PARAMETERS.has(name));
  parsed.password = "";
  parsed.hash = "";
  parsed.search = new URLSearchParams(kept).toString();
  const left = entries.length - kept.length;
  return left > 0
    ? `${parsed.toString()} (${left} other query parameter${left > 1 ? "s" : ""} not shown)`
    : parsed.toString();
}

/**
 * The texts of `url` that may be its password, for redaction: the password the URL parses to,
 * the text after the first `:` of its user info as written (up to the last `@`, however the URL
 * parses), and the value of each `password` or `sslpassword` query parameter, as the URL parses
 * it and as written; each also %-decoded.
 */
export function databaseUrlPasswords(url: string): string[] {
  const passwords: string[] = [];
  try {
    const parsed = new URL(url);
    passwords.push(parsed.password);
    for (const [name, value] of parsed.searchParams) if (PASSWORD_PARAMETERS.has(name)) passwords.push(value);
  } catch {
    // Not a URL: the texts as written below are what the driver could take for the password.
  }
  const rest = url.replace(SCHEME, "");
  const userInfo = rest.slice(0, Math.max(0, rest.lastIndexOf("@")));
  const colon = userInfo.indexOf(":");
  if (colon >= 0) passwords.push(userInfo.slice(colon + 1));
  passwords.push(...queryPasswordsAsWritten(url));
  return [...new Set([...passwords, ...passwords.map(decoded)])].filter((password) => password !== "");
}

/** The values of the password parameters in the text after the first `?` of `url` (up to a `#`), as written. */
function queryPasswordsAsWritten(url: string): string[] {
  const question = url.indexOf("?");
  if (question < 0) return [];
  const query = url.slice(question + 1).split("#")[0] ?? "";
  const values: string[] = [];
  for (const pair of query.split("&")) {
    const equals = pair.indexOf("=");
    if (equals >= 0 && PASSWORD_PARAMETERS.has(decoded(pair.slice(0, equals)))) values.push(pair.slice(equals + 1));
  }
  return values;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
