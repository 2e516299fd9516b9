/** A fetch as the SDK calls it (global fetch fits; tests and proxies may pass their own). */
export type ModelFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** The statuses the SDK retries; only their retry hints matter. */
function isRetryable(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The delay a response asks for, in ms, from `retry-after-ms` or `retry-after` (seconds or HTTP date); null if none. */
export function requestedRetryDelayMs(headers: Headers, now = Date.now()): number | null {
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (!Number.isNaN(ms)) return ms;
  const raw = headers.get("retry-after");
  if (raw === null) return null;
  const seconds = Number.parseFloat(raw);
  if (!Number.isNaN(seconds)) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? null : date - now;
}

/**
 * Wraps fetch so a retryable response never asks the SDK to wait longer than
 * `maxDelayMs` before its next attempt. The SDK obeys `retry-after(-ms)` without an upper
 * bound and sleeps without watching the abort signal, so an upstream answering
 * `Retry-After: 3600` would otherwise stall a run for an hour. Other responses pass
 * through untouched (streams included).
 */
export function capRetryDelay(fetchImpl: ModelFetch, maxDelayMs: number): ModelFetch {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    if (response.ok || !isRetryable(response.status)) return response;
    const requested = requestedRetryDelayMs(response.headers);
    if (requested === null || requested <= maxDelayMs) return response;
    const headers = new Headers(response.headers);
    headers.delete("retry-after");
    headers.set("retry-after-ms", String(maxDelayMs));
    return withHeaders(response, headers);
  };
}

/** The highest status the Response constructor accepts; an upstream may send up to 999. */
const MAX_CONSTRUCTIBLE_STATUS = 599;

/** `response` with other headers: same body, status and status text, whatever the status. */
function withHeaders(response: Response, headers: Headers): Response {
  const init = { status: response.status, statusText: response.statusText, headers };
  if (response.status <= MAX_CONSTRUCTIBLE_STATUS) return new Response(response.body, init);
  // Built with a status it accepts, then made to report the upstream's own (an own property
  // shadows the prototype's getter; the body and headers are unaffected).
  const relabelled = new Response(response.body, { ...init, status: MAX_CONSTRUCTIBLE_STATUS });
  Object.defineProperty(relabelled, "status", { value: response.status, enumerable: true });
  return relabelled;
}
