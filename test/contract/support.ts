/**
 * Request helpers for the contract suite: every response they receive is validated
 * against openapi.yaml (`validateResponse`) before the test sees it.
 */
import { type Dispatcher, request } from "undici";
import { validateResponse } from "../helpers/openapi-validator.js";
import { openSse, type SseEvent, type SseStream } from "../helpers/sse-client.js";
import type { TestServer } from "../helpers/test-server.js";

export interface CallOptions {
  /** Values of the template's `{name}` segments. */
  params?: Record<string, string>;
  /** The query string, without `?`. */
  query?: string;
  /** A JSON body. */
  body?: unknown;
  /** A body sent as it is (with `contentType`), instead of `body`. */
  rawBody?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  headers: Headers;
  contentType: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected freely after validation.
  body: any;
}

/** `/runs/{id}` with `{id: "run_1"}` → `/runs/run_1`; every segment must be given. */
export function fillPath(template: string, params: Record<string, string> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`no value for {${name}} in ${template}`);
    return encodeURIComponent(value);
  });
}

/** Sends a request to `server`, validates the response against the spec, returns it. */
export async function call(
  server: Pick<TestServer, "url">,
  method: string,
  template: string,
  { params, query, body, rawBody, contentType, headers = {} }: CallOptions = {},
): Promise<CallResult> {
  const url = `${server.url}${fillPath(template, params)}${query ? `?${query}` : ""}`;
  const payload = rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
  const type = contentType ?? (body !== undefined ? "application/json" : undefined);
  const res = await send(url, {
    method,
    headers: { ...(type ? { "content-type": type } : {}), ...headers },
    body: payload,
  });
  const text = await res.text();
  const responseType = res.headers.get("content-type");
  let parsed: unknown = text === "" ? null : text;
  if (text !== "" && responseType?.includes("json")) {
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${template} -> ${res.status}: a JSON content type with a body that does not parse`);
    }
  }
  validateResponse({
    method,
    path: template,
    status: res.status,
    body: parsed,
    contentType: text === "" ? null : responseType,
    headers: res.headers,
  });
  return { status: res.status, headers: res.headers, contentType: responseType, body: parsed };
}

/**
 * fetch, or, for a request that names its own `host` header (which fetch does not send),
 * undici's request with the answer in fetch's shape.
 */
async function send(
  url: string,
  init: { method: string; headers: Record<string, string>; body: string | undefined },
): Promise<{ status: number; headers: Headers; text(): Promise<string> }> {
  if (!Object.keys(init.headers).some((name) => name.toLowerCase() === "host")) return fetch(url, init);
  const res = await request(url, {
    method: init.method as Dispatcher.HttpMethod,
    headers: init.headers,
    body: init.body,
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    for (const one of Array.isArray(value) ? value : [value ?? ""]) headers.append(name, one);
  }
  return { status: res.statusCode, headers, text: () => res.body.text() };
}

/** Opens an event stream (GET, or POST with a JSON body) without validating yet. */
export function stream(
  server: Pick<TestServer, "url">,
  method: "GET" | "POST",
  template: string,
  { params, query, body, headers = {} }: Omit<CallOptions, "rawBody" | "contentType"> = {},
): Promise<SseStream> {
  const url = `${server.url}${fillPath(template, params)}${query ? `?${query}` : ""}`;
  return openSse(url, { method, headers, body });
}

/** Waits for the server to end the stream, validates status, headers and every frame, returns the frames. */
export async function validatedStream(method: string, template: string, sse: SseStream): Promise<SseEvent[]> {
  const events = await sse.ended;
  validateResponse({
    method,
    path: template,
    status: sse.status,
    body: events.map(({ id, event, data }) => ({ id, event, data })),
    contentType: sse.headers["content-type"] ?? null,
    headers: sse.headers as Record<string, unknown>,
  });
  return events;
}
