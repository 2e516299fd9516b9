export const DEFAULT_BASE_URL = "https://api.openai.com/v1";
/** Per attempt: how long to wait for the response headers. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Once streaming: the longest gap between two chunks. */
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;
/** MODEL_STREAM_MAX_MS's default: 30 minutes. */
export const DEFAULT_STREAM_MAX_MS = 1_800_000;
/**
 * Once a reply's finish_reason arrived, the longest silence allowed for what may follow it (the
 * usage chunk, `[DONE]`) when shorter than the idle timeout: the reply is whole, so past it the
 * stream is closed and the reply kept, with the usage reported so far.
 */
export const FINISH_GRACE_MS = 5_000;
export const DEFAULT_MAX_RETRIES = 2;
/** The longest wait between attempts an upstream's `retry-after` may ask for. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 30_000;

/** A client's settings (see OpenAIModelClientOptions), each given or its default. */
export interface ClientSettings {
  model: string;
  maxRetries: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
  streamMaxMs: number;
  maxRetryDelayMs: number;
  baseURL: string;
}

/** `options` with the defaults filled in; throws a TypeError naming the first setting that cannot work. */
export function clientSettings(
  options: { model: string } & { [K in keyof ClientSettings]?: ClientSettings[K] | undefined },
): ClientSettings {
  const settings: ClientSettings = {
    model: options.model,
    maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    streamMaxMs: options.streamMaxMs ?? DEFAULT_STREAM_MAX_MS,
    maxRetryDelayMs: options.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS,
    baseURL: options.baseURL ?? DEFAULT_BASE_URL,
  };
  assertSettings(settings);
  return settings;
}

/** Throws a TypeError naming the first setting of the client that cannot work. */
function assertSettings(s: ClientSettings): void {
  if (!s.model) throw new TypeError("createOpenAIModelClient: model must be a non-empty string");
  if (!Number.isInteger(s.maxRetries) || s.maxRetries < 0) {
    throw new TypeError("createOpenAIModelClient: maxRetries must be a non-negative integer");
  }
  for (const [name, value] of [
    ["requestTimeoutMs", s.requestTimeoutMs],
    ["idleTimeoutMs", s.idleTimeoutMs],
    ["streamMaxMs", s.streamMaxMs],
    ["maxRetryDelayMs", s.maxRetryDelayMs],
  ] as const) {
    if (!Number.isInteger(value) || value <= 0) {
      throw new TypeError(`createOpenAIModelClient: ${name} must be a positive integer`);
    }
  }
  try {
    new URL(s.baseURL);
  } catch {
    throw new TypeError("createOpenAIModelClient: baseURL must be an absolute URL");
  }
}
