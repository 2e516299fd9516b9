import { Readable } from "node:stream";
import { Agent, request } from "undici";
import type { ModelFetch } from "./retry-delay-cap.js";

/** One keep-alive connection pool for every model request. */
const dispatcher = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

/** Statuses whose responses carry no body (a Response with one cannot be built). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The fetch the SDK uses by default: a thin `fetch` over undici's `request` and one
 * connection pool. It does what the SDK needs (method, headers, a string body, abort,
 * status, headers and a streamed body back) at about two thirds of the CPU of a full
 * `fetch`, which matters: a run makes a model request per turn. Redirects are not
 * followed (an OpenAI-compatible API does not redirect).
 */
export const upstreamFetch: ModelFetch = async (input, init) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  const headers: Record<string, string> = {};
  new Headers(init?.headers).forEach((value, name) => {
    headers[name] = value;
  });
  const response = await request(url, {
    method: (init?.method ?? "GET") as "GET",
    headers,
    body: (init?.body ?? undefined) as string | undefined,
    signal: init?.signal ?? undefined,
    dispatcher,
  });
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
  }
  if (NULL_BODY.has(response.statusCode)) {
    response.body.resume();
    return new Response(null, { status: response.statusCode, headers: responseHeaders });
  }
  return new Response(Readable.toWeb(response.body) as ReadableStream<Uint8Array>, {
    status: response.statusCode,
    headers: responseHeaders,
  });
};
