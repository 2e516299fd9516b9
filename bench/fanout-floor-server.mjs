#!/usr/bin/env node
// The fan-out floor: a benchmark fixture, NOT the product. For `npm run bench:fanout` it
// answers the same requests as our server (POST /sessions, POST /sessions/{id}/runs,
// GET /runs/{id}/events, GET /healthz) and does only what one run streamed to W watchers
// cannot avoid: the run's two streamed model requests (one tool call, then the text), and
// for each read of the upstream's stream the SSE frames of its text deltas (as our server
// sends `text.delta` events, in one chunk of the chunked body) encoded once and written to
// every watcher's socket, one `socket.write` of that shared buffer each. Nothing is stored, validated or logged; no
// heartbeats, no backpressure handling, no replay. Its CPU per run and token latencies are
// a lower bound for this workload on this machine, not the product.
//
// Env: PORT (3000), HOST (127.0.0.1), OPENAI_BASE_URL (the fake upstream's /v1).
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";

const upstream = (process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8000/v1").replace(/\/$/, "");
/** run id -> { sockets, seq, done } */
const runs = new Map();

/** SSE frames in one chunk of a chunked body, as bytes. */
function chunk(frames) {
  const body = Buffer.from(frames);
  return Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n")]);
}
const frameOf = (run, type, data) => `id: ${++run.seq}\nevent: ${type}\ndata: ${data}\n\n`;

/** Writes `bytes` to every watcher of `run`: the one thing fan-out cannot avoid. */
function fanOut(run, bytes) {
  for (const socket of run.sockets) if (!socket.destroyed) socket.write(bytes);
}

/** One streamed chat completion; calls `onDeltas` with the content deltas' texts of each read. */
async function chat(messages, onDeltas) {
  const res = await fetch(`${upstream}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer bench" },
    body: JSON.stringify({ model: "fake-model", stream: true, messages, tools: [LIST_FILES] }),
  });
  const decoder = new TextDecoder();
  let carry = "";
  for await (const part of res.body) {
    carry += decoder.decode(part, { stream: true });
    const texts = [];
    let end = carry.indexOf("\n\n");
    while (end >= 0) {
      const line = carry.slice(0, end);
      carry = carry.slice(end + 2);
      end = carry.indexOf("\n\n");
      if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
      const text = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
      if (text) texts.push(text);
    }
    if (texts.length) onDeltas(texts);
  }
}
const LIST_FILES = {
  type: "function",
  function: { name: "list_files", parameters: { type: "object", properties: {} } },
};

async function execute(run) {
  const user = { role: "user", content: run.input };
  await chat([user], () => {});
  const call = { id: "call_1", type: "function", function: { name: "list_files", arguments: "{}" } };
  const messages = [user, { role: "assistant", content: null, tool_calls: [call] }];
  messages.push({ role: "tool", tool_call_id: "call_1", content: "[]" });
  // The deltas of one read of the upstream leave together: one write per watcher.
  await chat(messages, (texts) =>
    fanOut(
      run,
      chunk(texts.map((text) => frameOf(run, "text.delta", JSON.stringify({ type: "text.delta", text }))).join("")),
    ),
  );
  const finished = frameOf(run, "run.finished", '{"type":"run.finished","status":"finished"}');
  fanOut(run, Buffer.concat([chunk(finished), Buffer.from("0\r\n\r\n")]));
  run.done = true;
  for (const socket of run.sockets) socket.end();
}

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const server = createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0];
  if (req.method === "GET" && path === "/healthz") return json(res, 200, { status: "ok" });
  if (req.method === "POST" && path === "/sessions") return json(res, 201, { id: randomUUID() });
  if (req.method === "POST" && /^\/sessions\/[^/]+\/runs$/.test(path)) {
    const parts = [];
    req.on("data", (part) => parts.push(part));
    req.on("end", () => {
      const id = randomUUID();
      const run = { sockets: new Set(), seq: 0, done: false, input: JSON.parse(Buffer.concat(parts)).input };
      runs.set(id, run);
      execute(run).catch((err) => console.error(`fanout floor: run ${id}: ${err.message}`));
      json(res, 201, { id, status: "running" });
    });
    return;
  }
  const events = /^\/runs\/([^/]+)\/events$/.exec(path);
  const run = events && runs.get(events[1]);
  if (req.method === "GET" && run && !run.done) {
    // The response is this socket's from here on: head and chunks written on it directly.
    const socket = req.socket;
    socket.write(
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n" +
        "connection: close\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    socket.write(chunk("retry: 2000\n\n"));
    run.sockets.add(socket);
    socket.on("close", () => run.sockets.delete(socket));
    socket.on("error", () => {});
    return;
  }
  json(res, 404, { error: { code: "NOT_FOUND" } });
});
server.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? "127.0.0.1");
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
