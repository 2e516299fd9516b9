/** The console's calls to the server: same origin, the tab's API key when there is one. */
const KEY_STORAGE = "agent-server-key";

export const key = {
  get: (): string | null => sessionStorage.getItem(KEY_STORAGE),
  set: (value: string) => sessionStorage.setItem(KEY_STORAGE, value),
  clear: () => sessionStorage.removeItem(KEY_STORAGE),
};

/**
 * The server's refusal: its status, and its error's code, message and details (see openapi.yaml;
 * `details` is empty when the error has none, or the reply is no API JSON).
 */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;

  constructor({
    status,
    code,
    message,
    details = {},
  }: { status: number; code: string; message: string; details?: Record<string, unknown> }) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

const NOT_JSON = Symbol("not JSON");

/** The body as JSON: null when empty, NOT_JSON when it is something else (a proxy's HTML page). */
function parsed(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/** "HTTP 502 Bad Gateway": a reply's status as the header shows it. */
const httpWords = (res: Response) => `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`;

/**
 * The API's JSON answer to `method path` (`body` sent as JSON, `headers` added), or an
 * HttpError: the server's error (its code and message), or the reply's status when it is no
 * API JSON.
 */
export async function api(
  method: string,
  path: string,
  body?: unknown,
  { headers: extra = {} }: { headers?: Record<string, string> } = {},
  // biome-ignore lint/suspicious/noExplicitAny: the console reads the API's JSON as documented in openapi.yaml.
): Promise<any> {
  const headers: Record<string, string> = { ...extra };
  const bearer = key.get();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const json = parsed(text);
  const error = (json as { error?: { code?: string; message?: string; details?: unknown } } | null)?.error;
  if (!res.ok) {
    const details = error?.details;
    throw new HttpError({
      status: res.status,
      code: error?.code ?? "HTTP",
      message: error?.message ?? httpWords(res),
      details: typeof details === "object" && details !== null ? (details as Record<string, unknown>) : {},
    });
  }
  // A page that is not the API's JSON (a proxy's, a login page's) is no answer either.
  if (json === NOT_JSON)
    throw new HttpError({ status: res.status, code: "NOT_JSON", message: `${httpWords(res)}, not JSON` });
  return json;
}

/**
 * Whether a request failed without the server's answer: no reply reached the page (the
 * connection failed or dropped: the request may have been taken all the same), or a 5xx that
 * is not the API's error (a proxy's 502 page: the server may have taken it before).
 */
export function unanswered(err: unknown): boolean {
  return !(err instanceof HttpError) || (err.code === "HTTP" && err.status >= 500);
}

/** An error as the header shows it: the server's code and words, else the error's own. */
export function errorText(err: unknown): string {
  if (err instanceof HttpError) return err.code === "HTTP" ? err.message : `${err.message} (${err.status} ${err.code})`;
  return String(err);
}

/**
 * A new Idempotency-Key: 128 random bits in hex (not crypto.randomUUID, which a page served
 * over plain HTTP from another host than localhost does not have).
 */
export function newIdempotencyKey(): string {
  const bits = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bits, (b) => b.toString(16).padStart(2, "0")).join("");
}
