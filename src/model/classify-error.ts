import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, OpenAIError } from "openai";
import type { ModelErrorCode } from "../agent/model.js";
import { errnoCode, isOutOfDescriptors } from "../errno.js";
import { isOutOfCredit, isQuotaExhausted } from "./quota-exhausted.js";
import { displayURL, redactDetail } from "./redact.js";
import { refusalHint } from "./refusal-hint.js";

export interface ModelFailure {
  code: ModelErrorCode;
  message: string;
  /** What to try, when the failure says better than its code (a request the upstream refused as sent). */
  hint?: string;
}

/** What the classifier needs to name the likely cause. */
export interface FailureContext {
  baseURL: string;
  model: string;
  /** Replaces the server's secrets (the API key, the agent keys...) in upstream text: a secretRedactor of them. */
  redactSecrets: (text: string) => string;
  maxRetries: number;
  requestTimeoutMs: number;
  /** "request": before the stream started (the SDK may have retried); "stream": while reading chunks. */
  phase: "request" | "stream";
}

/**
 * Maps anything the SDK (or fetch underneath it) threw to a stable code and a message a
 * person can act on. Messages name the variable to check and never contain the API key nor any
 * other secret ctx.redactSecrets replaces.
 * Aborts are not classified here: the caller decides user abort vs idle timeout first.
 */
export function classifyError(error: unknown, ctx: FailureContext): ModelFailure {
  const where = displayURL(ctx.baseURL);
  const attempts = `${ctx.maxRetries + 1} attempt${ctx.maxRetries === 0 ? "" : "s"}`;

  if (error instanceof APIUserAbortError) return { code: "MODEL_ABORTED", message: "the model request was aborted" };
  if (error instanceof APIConnectionTimeoutError) {
    return {
      code: "MODEL_TIMEOUT",
      message: `the model upstream at ${where} sent no response within ${ctx.requestTimeoutMs} ms (${attempts})`,
    };
  }
  if (error instanceof APIConnectionError) {
    const noDescriptor = outOfDescriptors(error);
    if (noDescriptor) {
      // The SDK retried it (a connection error); the flood of connections may have passed by then.
      const holder = noDescriptor === "EMFILE" ? "the server holds" : "the system's processes hold";
      return {
        code: "MODEL_OUT_OF_DESCRIPTORS",
        message: `the server has no file descriptor left to connect to the model upstream at ${where} (${noDescriptor}; ${attempts}): ${holder} too many connections or files; nothing is wrong with the upstream`,
      };
    }
    return {
      code: "MODEL_UPSTREAM",
      message: `could not connect to the model upstream at ${where} (${attempts}): ${redactDetail(causeText(error), ctx.redactSecrets)}; check OPENAI_BASE_URL`,
    };
  }
  if (error instanceof APIError) {
    const detail = apiErrorDetail(error, ctx.redactSecrets);
    const suffix = detail ? `: ${detail}` : "";
    const status = error.status;
    const billing = isQuotaExhausted(error)
      ? "out of quota (insufficient_quota)"
      : isOutOfCredit({ status, code: error.code, message: detail })
        ? "out of credit"
        : undefined;
    if (billing) {
      const how = status === undefined ? "mid-stream" : `with HTTP ${status}`;
      return {
        code: "MODEL_QUOTA_EXHAUSTED",
        message: `the model upstream at ${where} refused the request ${how} because the account is ${billing}${suffix}`,
      };
    }
    if (status === undefined) {
      // An `{"error": ...}` object sent as a stream chunk; a rate limit is told by its code
      // (429, as OpenRouter sends it, or OpenAI's "rate_limit_exceeded").
      // The SDK types `code` as a string; providers send a number too.
      const code = String(error.code as unknown);
      if (code === "429" || code === "rate_limit_exceeded") {
        return { code: "MODEL_RATE_LIMITED", message: `the model upstream reported a rate limit mid-stream${suffix}` };
      }
      return { code: "MODEL_UPSTREAM", message: `the model upstream reported an error mid-stream${suffix}` };
    }
    if (status === 401 || status === 403) {
      return {
        code: "MODEL_AUTH",
        message: `the upstream rejected the API key (OPENAI_API_KEY) with HTTP ${status}${suffix}`,
      };
    }
    if (status === 404) {
      return {
        code: "MODEL_NOT_FOUND",
        message: `model ${ctx.model} or base URL ${where} not found: check OPENAI_MODEL and OPENAI_BASE_URL${suffix}`,
      };
    }
    if (status === 429) {
      return {
        code: "MODEL_RATE_LIMITED",
        message: `the upstream rate-limited the request (HTTP 429) and retrying did not help (maxRetries ${ctx.maxRetries})${suffix}`,
      };
    }
    if (status === 408) {
      return { code: "MODEL_TIMEOUT", message: `the upstream timed out the request (HTTP 408)${suffix}` };
    }
    if (status >= 500) {
      return {
        code: "MODEL_UPSTREAM",
        message: `the model upstream at ${where} failed with HTTP ${status} and retrying did not help (maxRetries ${ctx.maxRetries})${suffix}`,
      };
    }
    const message = `the model upstream refused the request with HTTP ${status}${suffix}`;
    // A 409 (a lock timeout) the SDK retries; what else is left of 4xx is refused as sent.
    if (status < 400 || status > 499 || status === 409) return { code: "MODEL_UPSTREAM", message };
    return {
      code: "MODEL_UPSTREAM",
      message,
      hint: refusalHint({ status, code: error.code, type: error.type, message: detail }),
    };
  }
  if (error instanceof SyntaxError) {
    return {
      code: "MODEL_BAD_RESPONSE",
      message: `the model upstream sent a stream chunk that is not valid JSON: ${redactDetail(error.message, ctx.redactSecrets)}`,
    };
  }
  if (error instanceof OpenAIError) {
    return {
      code: "MODEL_BAD_RESPONSE",
      message: `the model upstream sent an unusable response: ${redactDetail(error.message, ctx.redactSecrets)}`,
    };
  }
  if (ctx.phase === "stream") {
    // undici: TypeError("terminated") caused by SocketError("other side closed") and the like.
    return {
      code: "MODEL_UPSTREAM",
      message: `the connection to the model upstream at ${where} broke mid-stream: ${redactDetail(causeText(error), ctx.redactSecrets)}`,
    };
  }
  return {
    code: "MODEL_UPSTREAM",
    message: `the model request to ${where} failed: ${redactDetail(causeText(error), ctx.redactSecrets)}`,
  };
}

/** The upstream's own explanation: the JSON body's `error.message`, or the raw body text. */
function apiErrorDetail(error: APIError, redactSecrets: (text: string) => string): string {
  const body: unknown = error.error;
  let text: string | undefined;
  if (typeof body === "object" && body !== null && "message" in body && typeof body.message === "string") {
    text = body.message;
  } else if (typeof body === "string") {
    text = body;
  } else {
    // makeMessage prefixes the status; "(no body)" carries no information.
    text = error.message.replace(/^\d{3} /, "");
    if (/status code \(no body\)$|^\(no status code or body\)$/.test(text)) text = undefined;
  }
  return text ? redactDetail(text, redactSecrets) : "";
}

/**
 * EMFILE or ENFILE when a cause of a connection error says the process or the system had no
 * file descriptor left for the socket (undici's connect error, or fetch's TypeError around it).
 */
function outOfDescriptors(error: APIConnectionError): "EMFILE" | "ENFILE" | undefined {
  let current: unknown = error.cause;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = errnoCode(current);
    if (isOutOfDescriptors(code)) return code;
    current = current.cause;
  }
  return undefined;
}

/** The chain of causes as "outer: inner (CODE)", the innermost being the informative one. */
function causeText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    const text =
      typeof code === "string" && !current.message.includes(code) ? `${current.message} (${code})` : current.message;
    if (text && !parts.includes(text)) parts.push(text);
    current = current.cause;
  }
  if (parts.length === 0) return String(error);
  return parts.join(": ");
}
