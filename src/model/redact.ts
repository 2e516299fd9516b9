/** Longest upstream detail quoted in an error message. */
const MAX_DETAIL_CHARS = 300;

/** Things that look like bearer secrets (OpenAI-style `sk-...` keys, possibly masked with `*`). */
const SECRET_LIKE = /\bsk-[A-Za-z0-9_*.-]{4,}/g;

/**
 * Makes upstream text safe to show: removes the configured API key and anything shaped
 * like one (upstreams echo masked keys in 401 bodies), collapses whitespace and caps the
 * length. Contract: the returned text never contains `apiKey`.
 */
export function redactDetail(text: string, apiKey: string | undefined): string {
  let out = text;
  if (apiKey) out = out.split(apiKey).join("[redacted]");
  out = out.replace(SECRET_LIKE, "sk-[redacted]").replace(/\s+/g, " ").trim();
  if (out.length > MAX_DETAIL_CHARS) out = `${out.slice(0, MAX_DETAIL_CHARS)}…`;
  // Truncation cannot reintroduce the key (it only shortens), so the contract holds.
  return out;
}

/** A base URL as shown in messages: without user info, query or fragment. */
export function displayURL(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    url.username = "";
    url.password = "";
    url.search = "";
    url.hash = "";
    return url.toString().replace(/\/$/, "");
  } catch {
    return "(invalid base URL)";
  }
}
