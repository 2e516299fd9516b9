/**
 * Query parameters of a PostgreSQL connection URL shown in messages: they name where to connect
 * and how, never a secret. Every other one is left out (`password`, `sslpassword`, `sslkey`,
 * `sslcert`, `options`, and whatever a driver adds later).
 */
const SHOWN_PARAMETERS = new Set(["host", "port", "sslmode", "connect_timeout", "application_name"]);

/** A URL's scheme with its `//`. */
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * Whether where the user name and password of `url` end cannot be told from its text: a `/`,
 * `?` or `#` before its last `@`. A password `2024/x` then parses as the port 2024 of the host
 * the user name is, and the path `/x@host/db`, which reads the same as an `@` in a path or
 * query; the driver connects as it parses, so its reasons may quote the password too.
 */
export function ambiguousUserInfo(url: string): boolean {
  const rest = url.replace(SCHEME, "");
  const at = rest.lastIndexOf("@");
  return at >= 0 && /[/?#]/.test(rest.slice(0, at));
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
 * The texts of `url` that may be its password, for redaction: the password the URL parses to
 * and the text after the first `:` of its user info as written (up to the last `@`, however
 * the URL parses), each also %-decoded.
 */
export function databaseUrlPasswords(url: string): string[] {
  const passwords: string[] = [];
  try {
    passwords.push(new URL(url).password);
  } catch {
    // Not a URL: the text as written below is what the driver could take for the password.
  }
  const rest = url.replace(SCHEME, "");
  const userInfo = rest.slice(0, Math.max(0, rest.lastIndexOf("@")));
  const colon = userInfo.indexOf(":");
  if (colon >= 0) passwords.push(userInfo.slice(colon + 1));
  return [...new Set([...passwords, ...passwords.map(decoded)])].filter((password) => password !== "");
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
