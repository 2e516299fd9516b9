/** Query parameters that carry credentials (`token`, `api_key`, `access_token`...): their values never reach a log line. */
const SECRET_QUERY_PARAM =
  /^(?:.*[-_])?(?:token|key|apikey|secret|password|passwd|auth|authorization|signature|sig|credentials?)$/i;

/** `url` as it may be logged: the values of secret query parameters replaced. */
export function logUrl(url: string): string {
  const at = url.indexOf("?");
  if (at < 0) return url;
  const query = url
    .slice(at + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      const name = decodeURIComponentSafe(eq < 0 ? pair : pair.slice(0, eq));
      return SECRET_QUERY_PARAM.test(name.trim()) ? `${pair.slice(0, eq < 0 ? pair.length : eq)}=[redacted]` : pair;
    });
  return `${url.slice(0, at)}?${query.join("&")}`;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    return text;
  }
}
