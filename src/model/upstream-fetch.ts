import type { Readable } from "node:stream";
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
  return new Response(webStreamOf(response.body), {
    status: response.statusCode,
    headers: responseHeaders,
  });
};

/**
 * A web stream over a Node body, with backpressure. Unlike Node 20's `Readable.toWeb`, a
 * chunk that arrives after the reader cancelled (the SDK cancels bodies it gives up on) is
 * dropped instead of throwing an uncaught "Controller is already closed".
 */
function webStreamOf(body: Readable): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      body.on("data", (chunk: Buffer) => {
        if (settled) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) body.pause();
      });
      body.once("end", () => {
        if (settled) return;
        settled = true;
        controller.close();
      });
      body.once("error", (err) => {
        if (settled) return;
        settled = true;
        controller.error(err);
      });
      body.once("close", () => {
        if (settled) return;
        settled = true;
        controller.error(new Error("the model's response ended before it was complete"));
      });
    },
    pull() {
      body.resume();
    },
    cancel() {
      settled = true;
      body.destroy();
    },
  });
}
