import type { ModelFetch } from "./retry-delay-cap.js";

/** The error `code` and `type` OpenAI answers an account out of quota or credit with (HTTP 429). */
const INSUFFICIENT_QUOTA = "insufficient_quota";

/**
 * Whether an upstream's error object (the `error` of an error answer's body, or of a stream
 * chunk) says the account is out of quota: `code` or `type` is `insufficient_quota`. No wait
 * or retry fixes that, unlike a rate limit, which OpenAI answers with the same 429.
 */
export function isQuotaExhausted(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, type } = error as { code?: unknown; type?: unknown };
  return code === INSUFFICIENT_QUOTA || type === INSUFFICIENT_QUOTA;
}

/**
 * What upstreams say of an account whose credit is used up: Anthropic's 400 "Your credit
 * balance is too low", DeepSeek's 402 "Insufficient Balance", OpenRouter's 402 "Insufficient
 * credits", SiliconFlow's "account balance is insufficient".
 */
const OUT_OF_CREDIT = /credit balance is too low|insufficient (account )?(balance|credits?)\b|balance is insufficient/i;

/** Statuses the SDK retries (and 5xx): their answers are not read as out of credit by their words. */
const RETRIED = new Set([408, 409, 429]);

/** An upstream's error answer: its HTTP status (none for an error chunk mid-stream), `code` and message. */
export interface ErrorAnswer {
  status: number | undefined;
  code: unknown;
  message: string;
}

/**
 * Whether an error answer says the provider account is out of credit: HTTP 402 Payment
 * Required (or an error chunk whose `code` is 402, as OpenRouter sends it mid-stream), or a
 * message saying so (OUT_OF_CREDIT) on an answer the SDK does not retry, so that it was asked once.
 */
export function isOutOfCredit({ status, code, message }: ErrorAnswer): boolean {
  if (status === 402 || (status === undefined && String(code) === "402")) return true;
  if (status !== undefined && (RETRIED.has(status) || status >= 500)) return false;
  return OUT_OF_CREDIT.test(message);
}

/** Whether an error answer's body text is a JSON `{"error": {...}}` whose error says the quota is exhausted. */
function bodySaysQuotaExhausted(text: string): boolean {
  try {
    const body: unknown = JSON.parse(text);
    return typeof body === "object" && body !== null && isQuotaExhausted((body as { error?: unknown }).error);
  } catch {
    return false;
  }
}

/**
 * Wraps fetch so that a 429 answer saying the account's quota is exhausted carries
 * `x-should-retry: false`, which the SDK obeys: it would otherwise retry it, with backoff, as a
 * rate limit, though no attempt can succeed. The body is read from a clone (or from the
 * answer itself when it has no `clone()`: upstreamFetch's error bodies are in memory and read
 * again at will); every other answer, and a body that cannot be read, passes through untouched.
 */
export function noRetryWhenQuotaExhausted(fetchImpl: ModelFetch): ModelFetch {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    if (response.status !== 429) return response;
    const readable = typeof response.clone === "function" ? response.clone() : response;
    const text = await readable.text().catch(() => "");
    if (!bodySaysQuotaExhausted(text)) return response;
    const headers = new Headers(response.headers);
    headers.set("x-should-retry", "false");
    // The text is all of it; the original body (a web stream after a clone) is not needed.
    (response.body as { cancel?: () => Promise<void> } | null)?.cancel?.().catch(() => {});
    return new Response(text, { status: response.status, statusText: response.statusText, headers });
  };
}
