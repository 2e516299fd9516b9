/**
 * Query parameters of a PostgreSQL connection URL shown in messages: they name where to connect
 * and how, never a secret. Every other one is left out (`password`, `sslpassword`, `sslkey`,
 * `sslcert`, `options`, and whatever a driver adds later).
 */
const SHOWN_PARAMETERS = new Set(["host", "port", "sslmode", "connect_timeout", "application_name"]);

/**
 * A PostgreSQL connection URL fit for an error message or a log: user, host, port and database
 * as written, without the password, the fragment, or any query parameter that may carry a secret
 * (the text says when some were left out). A URL that does not parse shows nothing but its
 * scheme (and only a postgres one): where the user name ends in it cannot be known.
 */
export function displayDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    const scheme = /^(postgres|postgresql):\/\//i.exec(url)?.[0] ?? "";
    return `${scheme}(not shown: it cannot be parsed as a URL)`;
  }
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
