#!/usr/bin/env node
// A stand-in OpenAI-compatible Chat Completions server for `npm run bench:http` when the
// shared benchmark kit (../shared/bench) is not checked out next to this repository.
// No dependencies; loopback only.
//
// POST /v1/chat/completions (or /chat/completions), streaming or not. What it answers:
//   - when no `tool` message follows the last `user` message: one call of FAKE_TOOL_NAME
//     (default "lookup") with the argument text FAKE_TOOL_ARGS (default {"key":"x"}),
//     streamed in three chunks, finish_reason "tool_calls";
//   - otherwise the text "done" in three content deltas, finish_reason "stop".
// With `stream_options.include_usage` a last chunk carries the usage. Then `data: [DONE]`.
// Env: PORT (0 = any free port), HOST (127.0.0.1), FAKE_LATENCY_MS (wait before the first
// chunk), FAKE_TOOL_NAME, FAKE_TOOL_ARGS. Prints the port alone on its first stdout line.
// Streaming text (`npm run bench:stream`, `bench:fanout`): FAKE_TEXT_TOKENS=N streams the
// text answer as N content deltas, one every FAKE_TOKEN_INTERVAL_MS (20); each delta is
// "~<send time> " (performance.timeOrigin + performance.now(), ms, 3 decimals), so a reader
// in another process measures each token's latency (see bench/token-stamps.mjs). With
// FAKE_HOLD_TEXT=1 text answers wait (headers sent) until POST /release; POST /hold holds
// the next ones again.
// GET /stats -> request counters; GET /v1/models -> the one model. With FAKE_KEEP_BODIES=N the
// raw bodies of the last N chat requests are kept, as received: GET /bodies -> a JSON array
// of them as strings, oldest first (`npm run bench:history` encodes them again to time that).
import { createServer } from "node:http";

const latencyMs = Math.max(0, Number(process.env.FAKE_LATENCY_MS ?? 0) || 0);
const toolName = process.env.FAKE_TOOL_NAME || "lookup";
const toolArgs = process.env.FAKE_TOOL_ARGS || '{"key":"x"}';
const textTokens = Math.max(0, Number(process.env.FAKE_TEXT_TOKENS ?? 0) || 0);
const tokenIntervalMs = Math.max(1, Number(process.env.FAKE_TOKEN_INTERVAL_MS ?? 20) || 20);
let held = process.env.FAKE_HOLD_TEXT === "1" ? [] : null;
const counters = { requests: 0, toolCalls: 0, texts: 0 };
let nextId = 0;
const keepBodies = Math.max(0, Number(process.env.FAKE_KEEP_BODIES ?? 0) || 0);
const keptBodies = [];

const wait = (ms) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** True when the conversation since the last user message holds no tool result yet. */
function shouldCallTool(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const role = messages[i]?.role;
    if (role === "tool") return false;
    if (role === "user") return true;
  }
  return true;
}

async function chatCompletions(res, raw) {
  let body;
  try {
    body = JSON.parse(raw);
  } catch {
    return json(res, 400, { error: { message: "the body is not JSON", type: "invalid_request_error" } });
  }
  if (!body || !Array.isArray(body.messages)) {
    return json(res, 400, { error: { message: "`messages` must be an array", type: "invalid_request_error" } });
  }
  const n = ++nextId;
  counters.requests++;
  const callTool = shouldCallTool(body.messages);
  if (callTool) counters.toolCalls++;
  else counters.texts++;
  const base = { id: `chatcmpl-bench-${n}`, created: Math.floor(Date.now() / 1000), model: body.model || "fake-model" };
  const usage = { prompt_tokens: 10, completion_tokens: callTool ? 5 : 3, total_tokens: callTool ? 15 : 13 };
  const callId = `call_bench_${n}`;

  if (!body.stream) {
    await wait(latencyMs);
    if (res.destroyed) return;
    const message = callTool
      ? {
          role: "assistant",
          content: null,
          tool_calls: [{ id: callId, type: "function", function: { name: toolName, arguments: toolArgs } }],
        }
      : { role: "assistant", content: "done" };
    return json(res, 200, {
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message, logprobs: null, finish_reason: callTool ? "tool_calls" : "stop" }],
      usage,
    });
  }

  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  res.flushHeaders();
  const chunk = (delta, finishReason = null) => ({
    ...base,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  });
  const chunks = [];
  if (callTool) {
    const half = Math.max(1, Math.floor(toolArgs.length / 2));
    chunks.push(
      chunk({
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: callId, type: "function", function: { name: toolName, arguments: "" } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: toolArgs.slice(0, half) } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: toolArgs.slice(half) } }] }),
      chunk({}, "tool_calls"),
    );
  } else {
    chunks.push(chunk({ role: "assistant", content: "" }));
    for (const piece of ["d", "on", "e"]) chunks.push(chunk({ content: piece }));
    chunks.push(chunk({}, "stop"));
  }
  if (body.stream_options?.include_usage) chunks.push({ ...base, object: "chat.completion.chunk", choices: [], usage });
  await wait(latencyMs);
  if (!callTool && textTokens > 0)
    return streamTokens(res, chunk, chunks.slice(-(body.stream_options?.include_usage ? 2 : 1)));
  if (res.destroyed) return;
  for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.end("data: [DONE]\n\n");
}

/** Streams FAKE_TEXT_TOKENS stamped deltas, one per interval, then `tail` and [DONE]. */
async function streamTokens(res, chunk, tail) {
  res.write(`data: ${JSON.stringify(chunk({ role: "assistant", content: "" }))}\n\n`);
  if (held) await new Promise((resolve) => held.push(resolve));
  const prefix = `data: ${JSON.stringify(chunk({ content: "\u0000" })).split("\\u0000")[0]}`;
  const suffix = JSON.stringify(chunk({ content: "\u0000" })).split("\\u0000")[1];
  const start = performance.now();
  for (let i = 0; i < textTokens; i++) {
    // Paced against the start, so timer lateness does not accumulate.
    await wait(start + (i + 1) * tokenIntervalMs - performance.now());
    if (res.destroyed) return;
    res.write(`${prefix}~${(performance.timeOrigin + performance.now()).toFixed(3)} ${suffix}\n\n`);
  }
  for (const c of tail) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.end("data: [DONE]\n\n");
}

const server = createServer((req, res) => {
  const path = (req.url || "/").split("?")[0];
  if (req.method === "POST" && path === "/release") {
    const waiting = held ?? [];
    held = null;
    for (const resolve of waiting) resolve();
    return json(res, 200, { released: waiting.length });
  }
  if (req.method === "POST" && path === "/hold") {
    held ??= [];
    return json(res, 200, { held: held.length });
  }
  if (req.method === "GET" && path === "/stats") return json(res, 200, counters);
  if (req.method === "GET" && path === "/bodies") return json(res, 200, keptBodies);
  if (req.method === "GET" && (path === "/v1/models" || path === "/models")) {
    return json(res, 200, {
      object: "list",
      data: [{ id: "fake-model", object: "model", created: 0, owned_by: "bench" }],
    });
  }
  if (req.method === "POST" && (path === "/v1/chat/completions" || path === "/chat/completions")) {
    const parts = [];
    req.on("data", (part) => parts.push(part));
    req.on("end", () => {
      const raw = Buffer.concat(parts).toString("utf8");
      if (keepBodies > 0) {
        keptBodies.push(raw);
        if (keptBodies.length > keepBodies) keptBodies.shift();
      }
      chatCompletions(res, raw).catch((err) => {
        if (res.headersSent) res.destroy();
        else json(res, 500, { error: { message: String(err), type: "server_error" } });
      });
    });
    return;
  }
  json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: "invalid_request_error" } });
});
server.keepAliveTimeout = 30_000;
server.listen(Number(process.env.PORT ?? 0) || 0, process.env.HOST || "127.0.0.1", () => {
  process.stdout.write(`${server.address().port}\n`);
});
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
