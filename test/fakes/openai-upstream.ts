/**
 * A scriptable fake OpenAI-compatible upstream over real HTTP, for tests.
 *
 * POST /v1/chat/completions (also /chat/completions) serves the queued replies FIFO, one
 * per request, speaking the Chat Completions streaming wire format exactly: role chunk,
 * content fragments, tool-call fragments (header `{index, id, type, function:{name,
 * arguments:""}}` then `{index, function:{arguments}}` pieces, parallel calls interleaved
 * round-robin), the finish chunk, the usage chunk (`choices: []`, only when the request
 * asked `stream_options.include_usage`; every other chunk then carries `usage: null`, as
 * OpenAI does), then `data: [DONE]`. A request with `stream` false gets one JSON
 * `chat.completion`. GET /v1/models lists "fake-model".
 *
 * Error replies (`status`) carry `retry-after-ms: 1` on retryable statuses (408, 409,
 * 429, 5xx) so SDK retries cost ~1 ms in tests. The default reply for an empty queue is
 * HTTP 500 "no scripted reply" with `x-should-retry: false`, so a missing script fails
 * the test at once instead of after retries.
 *
 * A reply with `raw` is sent as it is (status 200, `text/event-stream`, each string one
 * write): recorded provider streams are replayed byte for byte.
 *
 * `requests` records every POST to the completions endpoint (body parsed, headers as
 * received), including retried attempts; GET requests are not recorded.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: string | string[] /* pieces, one chunk each */;
}
export interface FakeReply {
  text?: string | string[]; // content fragments, one chunk each
  toolCalls?: FakeToolCall[]; // several = parallel calls (interleave their fragments by index)
  finishReason?: string | null; // default: "tool_calls" if toolCalls else "stop"; null = no finish chunk
  usage?: { prompt_tokens: number; completion_tokens: number } | null; // default {10, 5}; null = no usage chunk
  status?: number;
  errorBody?: unknown; // answer with this HTTP status and JSON error body instead of a stream
  hang?: "before-headers" | "after-chunks"; // never answer / stop sending (but keep the socket open) after `afterChunks` chunks
  afterChunks?: number; // used by hang "after-chunks", destroy, malformed
  destroy?: boolean; // destroy the socket after `afterChunks` chunks
  malformed?: boolean; // send a non-JSON data line after `afterChunks` chunks
  gate?: Promise<unknown>; // await this before sending the finish chunk (content/tool chunks already sent)
  endAfterDoneMs?: number; // end the body this long after `data: [DONE]` (its own write), not with it
  noDone?: boolean; // end the response after the last chunk without `data: [DONE]` (a body that just stops)
  raw?: string[]; // send these byte strings as the response body, verbatim, one write each (a recorded stream)
  rawWritten?: number; // set by the fake: how many `raw` pieces went out before the client stopped reading
  onRequest?: () => void; // called when this reply's request arrives
}
export interface FakeUpstream {
  baseURL: string; // "http://127.0.0.1:PORT/v1"
  enqueue(...replies: FakeReply[]): void; // served FIFO, one per POST /v1/chat/completions
  // biome-ignore lint/suspicious/noExplicitAny: request bodies are whatever the client sent; tests inspect them freely.
  requests: Array<{ body: any; headers: Record<string, string | string[] | undefined> }>; // every request, parsed
  // biome-ignore lint/suspicious/noExplicitAny: see `requests`.
  fallback?: (body: any) => FakeReply; // used when the queue is empty (default: HTTP 500 "no scripted reply" so tests fail visibly)
  assertComplete(): void; // throws if queued replies were not consumed
  discard(): void; // drops the queued replies (a test that failed may leave some for the next)
  close(): Promise<void>; // closes the server and any hanging sockets
  connections(): number; // TCP connections accepted so far
}

const FAKE_MODEL = "fake-model";
/** `afterChunks` when a reply uses hang/destroy/malformed without it: right after the role chunk. */
const DEFAULT_AFTER_CHUNKS = 1;

const NO_SCRIPT_REPLY: FakeReply = {
  status: 500,
  errorBody: { error: { message: "no scripted reply", type: "fake_upstream_error", code: null, param: null } },
};

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const queue: FakeReply[] = [];
  const sockets = new Set<Socket>();
  let closed = false;
  let releaseHangs: () => void = () => {};
  const closing = new Promise<void>((resolve) => {
    releaseHangs = resolve;
  });
  let replySeq = 0;

  let accepted = 0;
  const upstream: FakeUpstream = {
    baseURL: "",
    connections: () => accepted,
    requests: [],
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    discard: () => {
      queue.length = 0;
    },
    assertComplete: () => {
      if (queue.length > 0) {
        throw new Error(
          `fake upstream: ${queue.length} scripted repl${queue.length === 1 ? "y was" : "ies were"} not consumed`,
        );
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      releaseHangs();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server = http.createServer((req, res) => {
    res.on("error", () => {});
    req.on("error", () => {});
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && (path === "/v1/models" || path === "/models")) {
      sendJson(res, 200, {
        object: "list",
        data: [{ id: FAKE_MODEL, object: "model", created: 0, owned_by: "fake" }],
      });
      return;
    }
    if (req.method === "POST" && (path === "/v1/chat/completions" || path === "/chat/completions")) {
      const parts: Buffer[] = [];
      req.on("data", (part: Buffer) => parts.push(part));
      req.on("end", () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(parts).toString("utf8"));
        } catch {
          sendJson(res, 400, { error: { message: "invalid JSON body", type: "invalid_request_error" } });
          return;
        }
        upstream.requests.push({ body, headers: { ...req.headers } });
        const reply = queue.shift() ?? upstream.fallback?.(body) ?? NO_SCRIPT_REPLY;
        reply.onRequest?.();
        serveReply({ res, reply, body, n: ++replySeq, closing }).catch(() => {
          if (!res.headersSent)
            sendJson(res, 500, { error: { message: "fake upstream failed", type: "server_error" } });
          else res.destroy();
        });
      });
      return;
    }
    sendJson(res, 404, { error: { message: `no route ${req.method} ${path}`, type: "invalid_request_error" } });
  });
  server.on("connection", (socket) => {
    accepted++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  upstream.baseURL = `http://127.0.0.1:${port}/v1`;
  return upstream;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

// biome-ignore lint/suspicious/noExplicitAny: the parsed request body.
type RequestBody = any;

async function serveReply({
  res,
  reply,
  body,
  n,
  closing,
}: {
  res: http.ServerResponse;
  reply: FakeReply;
  body: RequestBody;
  n: number;
  closing: Promise<void>;
}): Promise<void> {
  if (reply.hang === "before-headers") {
    await closing;
    return;
  }
  if (reply.status !== undefined) {
    const headers: Record<string, string> = {};
    if (isRetryableStatus(reply.status)) headers["retry-after-ms"] = "1";
    if (reply === NO_SCRIPT_REPLY) headers["x-should-retry"] = "false";
    const errorBody = reply.errorBody ?? {
      error: {
        message: `HTTP ${reply.status} from the fake upstream`,
        type: "fake_upstream_error",
        code: null,
        param: null,
      },
    };
    sendJson(res, reply.status, errorBody, headers);
    return;
  }

  if (reply.raw) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    reply.rawWritten = 0;
    for (const piece of reply.raw) {
      if (res.destroyed) return;
      // Backpressure as a real server feels it: a reader that stopped reading stops the writes.
      const flushed = res.write(piece);
      reply.rawWritten++;
      if (flushed) await new Promise((resolve) => setImmediate(resolve));
      else {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done).off("close", done);
            resolve();
          };
          res.on("drain", done).on("close", done);
        });
      }
    }
    res.end();
    return;
  }

  const id = `chatcmpl-fake-${n}`;
  const created = Math.floor(Date.now() / 1000);
  const model = typeof body?.model === "string" ? body.model : FAKE_MODEL;
  const usage = reply.usage === undefined ? { prompt_tokens: 10, completion_tokens: 5 } : reply.usage;
  const toolCalls = reply.toolCalls ?? [];
  const finishReason =
    reply.finishReason === undefined ? (toolCalls.length > 0 ? "tool_calls" : "stop") : reply.finishReason;

  if (body?.stream !== true) {
    sendJson(res, 200, completionObject({ id, created, model, reply, n, finishReason, usage }));
    return;
  }

  const includeUsage = body?.stream_options?.include_usage === true;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  });

  // Everything before the finish chunk; the gate sits between these and the rest.
  const head = streamHead({ reply, toolCalls, n }).map((delta) => chunk(delta));
  const tail: unknown[] = [];
  if (finishReason !== null) tail.push(chunk({}, finishReason));
  if (includeUsage && usage !== null) {
    tail.push({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    });
  }

  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  res.flushHeaders();

  const afterChunks = reply.afterChunks ?? DEFAULT_AFTER_CHUNKS;
  let sent = 0;
  /** Applies the scripted fault due at this point; false means stop sending. */
  const beforeFrame = async (): Promise<boolean> => {
    if (sent !== afterChunks) return !res.destroyed;
    if (reply.destroy) {
      res.socket?.destroy();
      return false;
    }
    if (reply.hang === "after-chunks") {
      await closing;
      return false;
    }
    if (reply.malformed) res.write("data: {this is not json\n\n");
    return !res.destroyed;
  };
  const send = async (frame: unknown): Promise<boolean> => {
    if (!(await beforeFrame())) return false;
    res.write(`data: ${JSON.stringify(frame)}\n\n`);
    sent++;
    // Let each frame leave as its own write, as a real upstream streams them.
    await new Promise((resolve) => setImmediate(resolve));
    return !res.destroyed;
  };

  for (const frame of head) if (!(await send(frame))) return;
  if (reply.gate) await Promise.race([reply.gate, closing]);
  if (res.destroyed) return;
  for (const frame of tail) if (!(await send(frame))) return;
  if (!(await beforeFrame())) return;
  if (reply.endAfterDoneMs !== undefined && !reply.noDone) {
    res.write("data: [DONE]\n\n");
    await new Promise((resolve) => setTimeout(resolve, reply.endAfterDoneMs));
    res.end();
    return;
  }
  res.end(reply.noDone ? undefined : "data: [DONE]\n\n");
}

/** The deltas up to (not including) the finish chunk: role, content fragments, tool-call fragments. */
function streamHead({
  reply,
  toolCalls,
  n,
}: {
  reply: FakeReply;
  toolCalls: FakeToolCall[];
  n: number;
}): Array<Record<string, unknown>> {
  const texts = reply.text === undefined ? [] : Array.isArray(reply.text) ? reply.text : [reply.text];
  const headers = toolCalls.map((call, index) => ({
    index,
    id: call.id ?? `call_fake_${n}_${index}`,
    type: "function",
    function: { name: call.name, arguments: "" },
  }));
  const deltas: Array<Record<string, unknown>> = [];
  if (texts.length === 0 && headers.length > 0) {
    // As OpenAI does for a pure tool-call turn: the role chunk carries the first call's header.
    deltas.push({ role: "assistant", content: null, tool_calls: [headers[0]] });
    for (const header of headers.slice(1)) deltas.push({ tool_calls: [header] });
  } else {
    deltas.push({ role: "assistant", content: "" });
    for (const text of texts) deltas.push({ content: text });
    for (const header of headers) deltas.push({ tool_calls: [header] });
  }
  const pieces = toolCalls.map((call) => (Array.isArray(call.arguments) ? call.arguments : [call.arguments]));
  const rounds = Math.max(0, ...pieces.map((p) => p.length));
  for (let round = 0; round < rounds; round++) {
    pieces.forEach((callPieces, index) => {
      const piece = callPieces[round];
      if (piece !== undefined) deltas.push({ tool_calls: [{ index, function: { arguments: piece } }] });
    });
  }
  return deltas;
}

function completionObject({
  id,
  created,
  model,
  reply,
  n,
  finishReason,
  usage,
}: {
  id: string;
  created: number;
  model: string;
  reply: FakeReply;
  n: number;
  finishReason: string | null;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
}): unknown {
  const text = reply.text === undefined ? null : Array.isArray(reply.text) ? reply.text.join("") : reply.text;
  const calls = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_fake_${n}_${index}`,
    type: "function",
    function: { name: call.name, arguments: Array.isArray(call.arguments) ? call.arguments.join("") : call.arguments },
  }));
  return {
    id,
    object: "chat.completion",
    created,
    model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: text, refusal: null, ...(calls.length ? { tool_calls: calls } : {}) },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
  };
}
