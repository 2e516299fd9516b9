/** Throws a TypeError naming the first setting of the client that cannot work. */
export function assertSettings(s: {
  model: string;
  maxRetries: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
  maxRetryDelayMs: number;
  baseURL: string;
}): void {
  if (!s.model) throw new TypeError("createOpenAIModelClient: model must be a non-empty string");
  if (!Number.isInteger(s.maxRetries) || s.maxRetries < 0) {
    throw new TypeError("createOpenAIModelClient: maxRetries must be a non-negative integer");
  }
  for (const [name, value] of [
    ["requestTimeoutMs", s.requestTimeoutMs],
    ["idleTimeoutMs", s.idleTimeoutMs],
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
