import type { Readable } from "node:stream";
import { Agent } from "undici";
import { readErrorBody } from "./error-body.js";
import type { ModelFetch } from "./retry-delay-cap.js";
import { dispatchRequest } from "./upstream-dispatch.js";

/** One keep-alive connection pool for every model request. */
const dispatcher = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

/** Statuses whose responses carry no body. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The fetch the SDK uses by default: a thin `fetch` over undici's dispatcher (see
 * dispatchRequest) and one connection pool. It does what the SDK needs (method, headers, a string body, abort,
 * status, headers and a streamed body back) and no more, which matters: a run makes a
 * model request per turn. Redirects are not followed (an OpenAI-compatible API does not
 * redirect). The body of an error answer (not 2xx) is read before the promise resolves, at
 * most MAX_ERROR_BODY_BYTES of it, so the SDK's timeout and the caller's abort bound it.
 */
export const upstreamFetch: ModelFetch = async (input, init) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  const response = await dispatchRequest({
    dispatcher,
    url,
    method: init?.method ?? "GET",
    headers: plainHeaders(init?.headers),
    body: (init?.body ?? undefined) as string | undefined,
    signal: init?.signal ?? undefined,
  });
  const status = response.statusCode;
  const noBody = NULL_BODY.has(status);
  if (noBody) response.body.resume();
  const ok = status >= 200 && status < 300;
  return new UpstreamResponse({
    status,
    url,
    headers: new ResponseHeaders(response.headers),
    // An error's body is read here, bounded, while the SDK's timeout still runs (see readErrorBody).
    body: noBody ? null : ok ? destroyedOnReturn(response.body) : await readErrorBody(response.body, init?.signal),
  }) as unknown as Response;
};

/**
 * The body, with an async iterator whose `return()` always destroys it. The SDK gives up
 * on a body (an error response it retries) by calling `return()` on a fresh iterator;
 * Node's own iterator skips its cleanup when it was never started, which would leave the
 * body unread and its connection out of the pool.
 */
function destroyedOnReturn<T extends Readable>(body: T): T {
  const iterate = body[Symbol.asyncIterator].bind(body);
  body[Symbol.asyncIterator] = () => {
    const inner = iterate();
    const iterator: NodeJS.AsyncIterator<unknown> = {
      next: () => inner.next(),
      return: async (value?: undefined) => {
        // Destroying an unfinished body aborts its request; an error it may still emit is nobody's concern.
        body.on("error", () => {});
        body.destroy();
        return (await inner.return?.(value)) ?? { done: true, value };
      },
      throw: (err?: unknown) => inner.throw?.(err) ?? Promise.reject(err),
      [Symbol.asyncIterator]: () => iterator,
      [Symbol.asyncDispose]: async () => {
        await iterator.return?.();
      },
    };
    return iterator;
  };
  return body;
}

function plainHeaders(headers: RequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined) return out;
  const add = (value: string, name: string) => {
    out[name.toLowerCase()] = value;
  };
  if (headers instanceof Headers) headers.forEach(add);
  else new Headers(headers).forEach(add);
  return out;
}

/**
 * The part of a fetch `Response` the SDK reads (`ok`, `status`, `url`, `headers`, `body`,
 * `text()`, `json()`). The body is a Node stream (UpstreamBody), which the SDK iterates directly
 * (it accepts any async iterable of bytes), so no web stream or `Response` is built per
 * request. The SDK cancels a body it gives up on through its async iterator's `return()`,
 * which destroys the stream (see `destroyedOnReturn`).
 */
class UpstreamResponse {
  readonly status: number;
  readonly ok: boolean;
  readonly statusText = "";
  readonly redirected = false;
  readonly url: string;
  readonly headers: Headers;
  readonly body: (Readable & { text(): Promise<string>; json(): Promise<unknown> }) | null;

  constructor(init: {
    status: number;
    url: string;
    headers: ResponseHeaders;
    body: UpstreamResponse["body"];
  }) {
    this.status = init.status;
    this.ok = init.status >= 200 && init.status < 300;
    this.url = init.url;
    this.headers = init.headers as unknown as Headers;
    this.body = init.body;
  }

  text(): Promise<string> {
    return this.body ? this.body.text() : Promise.resolve("");
  }

  json(): Promise<unknown> {
    return this.body ? this.body.json() : Promise.reject(new SyntaxError("the response has no body"));
  }
}

/** Read-only response headers with the `Headers` methods the SDK and our error mapping use. */
class ResponseHeaders {
  readonly #values = new Map<string, string>();

  constructor(raw: Record<string, string | string[] | undefined>) {
    for (const name in raw) {
      const value = raw[name];
      if (value === undefined) continue;
      this.#values.set(name.toLowerCase(), Array.isArray(value) ? value.join(", ") : value);
    }
  }

  get(name: string): string | null {
    return this.#values.get(name.toLowerCase()) ?? null;
  }

  has(name: string): boolean {
    return this.#values.has(name.toLowerCase());
  }

  forEach(fn: (value: string, name: string, parent: this) => void): void {
    for (const [name, value] of this.#values) fn(value, name, this);
  }

  entries(): IterableIterator<[string, string]> {
    return this.#values.entries();
  }

  keys(): IterableIterator<string> {
    return this.#values.keys();
  }

  values(): IterableIterator<string> {
    return this.#values.values();
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.#values.entries();
  }
}
