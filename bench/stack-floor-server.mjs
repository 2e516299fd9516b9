#!/usr/bin/env node
// The stack floor: a benchmark fixture, NOT the product. A minimal server on the pinned
// stack (fastify + @fastify/sse, the openai SDK over our undici fetch from
// dist/src/model/upstream-fetch.js, better-sqlite3 with the product's pragmas) doing only
// the I/O a run of our server cannot avoid for the bench workload (one tool call, then
// text): the same HTTP requests, the same 12 SSE events with similar payloads, the same
// two streamed model requests, a commit for the session and five per run, one mkdir and
// one readdir. Not done: validation, auth, logging, run manager, recovery, approvals, a
// tool ledger, storing text deltas, idle timeouts and abort signals, the history of
// earlier runs; only list_files is offered to the model (the product offers six tools).
// Its CPU per run is a lower bound for what this stack costs per run, not the product.
//
//   BENCH_SERVER_ENTRY=bench/stack-floor-server.mjs node bench/http.mjs
//
// With FIXTURE_STORE_DELTAS=1 it also stores each text delta before sending it, as the laws
// make our server do (an event is stored before anyone sees it, and replays after a restart):
// the deltas of every run pending within 2 ms of the last write share one transaction (the
// group commit of src/store/group-commit.ts), and each frame is sent once its row committed.
// That is the floor for a server that keeps every event.
//
// Env: PORT (3000), HOST (127.0.0.1), DATABASE_PATH (./floor.db), WORKSPACE_ROOT or
// WORKSPACE_DIR (./workspaces), OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL (fake-model),
// FIXTURE_STORE_DELTAS, FIXTURE_SDK_ITERATOR.
import { mkdirSync } from "node:fs";
import { mkdir, readdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fastifySSE } from "@fastify/sse";
import Database from "better-sqlite3";
import Fastify from "fastify";
import OpenAI from "openai";
import { capRetryDelay } from "../dist/src/model/retry-delay-cap.js";
import { SseParser } from "../dist/src/model/sse-events.js";
import { upstreamFetch } from "../dist/src/model/upstream-fetch.js";

const env = process.env;
const workspaceRoot = resolve(env.WORKSPACE_ROOT || env.WORKSPACE_DIR || "./workspaces");
const model = env.OPENAI_MODEL || "fake-model";

// ---------- SQLite: the pragmas of src/store/database.ts, a schema of its own ----------
const dbPath = env.DATABASE_PATH || "./floor.db";
mkdirSync(dirname(resolve(dbPath)), { recursive: true });
mkdirSync(workspaceRoot, { recursive: true });
const db = new Database(dbPath, { timeout: 5000 });
for (const pragma of [
  "locking_mode = EXCLUSIVE",
  "journal_mode = WAL",
  "synchronous = NORMAL",
  "foreign_keys = ON",
  "wal_autocheckpoint = 10000",
  "cache_size = -8192",
  "temp_store = MEMORY",
])
  db.pragma(pragma);
db.exec(`
  CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, created_at TEXT NOT NULL) STRICT;
  CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions (id), status TEXT NOT NULL,
    stop_reason TEXT, input TEXT NOT NULL, stats TEXT NOT NULL, created_at TEXT NOT NULL, finished_at TEXT) STRICT;
  CREATE TABLE IF NOT EXISTS messages (
    run_id TEXT NOT NULL REFERENCES runs (id), seq INTEGER NOT NULL, id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, tool_calls TEXT, tool_call_id TEXT, created_at TEXT NOT NULL, PRIMARY KEY (run_id, seq)) STRICT;
  CREATE TABLE IF NOT EXISTS run_events (
    run_id TEXT NOT NULL REFERENCES runs (id), seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL) STRICT;
  CREATE UNIQUE INDEX IF NOT EXISTS run_events_run_seq ON run_events (run_id, seq);
`);
const sql = {
  session: db.prepare("INSERT INTO sessions (id, workspace, created_at) VALUES (?, ?, ?)"),
  run: db.prepare(
    "INSERT INTO runs (id, session_id, status, input, stats, created_at) VALUES (?, ?, 'running', ?, '{}', ?)",
  ),
  finish: db.prepare("UPDATE runs SET status = 'finished', stop_reason = ?, stats = ?, finished_at = ? WHERE id = ?"),
  message: db.prepare(
    "INSERT INTO messages (run_id, seq, id, role, content, tool_calls, tool_call_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  ),
  event: db.prepare("INSERT INTO run_events (run_id, seq, type, data) VALUES (?, ?, ?, ?)"),
};
/** Runs `fn` in one transaction (BEGIN/COMMIT). */
const commit = db.transaction((fn) => fn());

/** FIXTURE_STORE_DELTAS: deltas waiting for their group's transaction, then sent. */
const GROUP_MS = 2;
let pendingDeltas = [];
let deltaFlush = null;
let lastGroupAt = Number.NEGATIVE_INFINITY;
function flushDeltas() {
  clearTimeout(deltaFlush);
  clearImmediate(deltaFlush);
  deltaFlush = null;
  const group = pendingDeltas;
  pendingDeltas = [];
  lastGroupAt = performance.now();
  commit(() => {
    for (const d of group) sql.event.run(d.runId, d.seq, "text.delta", d.frame.data);
  });
  for (const d of group) d.send(d.frame);
}
function storeDelta(runId, seq, frame, send) {
  pendingDeltas.push({ runId, seq, frame, send });
  if (deltaFlush) return;
  const wait = lastGroupAt + GROUP_MS - performance.now();
  deltaFlush = wait > 0 ? setTimeout(flushDeltas, wait) : setImmediate(flushDeltas);
}
const storeDeltas = env.FIXTURE_STORE_DELTAS === "1";

let idCounter = 0;
const newId = (prefix) => `${prefix}_${Date.now().toString(36)}${(++idCounter).toString(36).padStart(8, "0")}`;

// ---------- the model client, wired as dist/src/model/openai-client.js does ----------
const client = new OpenAI({
  baseURL: env.OPENAI_BASE_URL || "https://api.openai.com/v1",
  apiKey: env.OPENAI_API_KEY || "unused",
  ...(env.OPENAI_API_KEY ? {} : { defaultHeaders: { Authorization: null } }),
  organization: null,
  project: null,
  maxRetries: 2,
  timeout: 60_000,
  logLevel: "off",
  fetch: capRetryDelay(upstreamFetch, 30_000),
});
// The list_files tool as our server describes it to the model.
const LIST_FILES = {
  type: "function",
  function: {
    name: "list_files",
    description:
      'List the files and directories under a workspace directory, recursively up to a depth. One path per line, relative to the workspace root (usable as-is with read_file), sorted, each directory followed by its contents. Directories end with "/", symbolic links with "@" (links are not followed). .git and node_modules are hidden. At most 500 entries; a note says when the list was cut.',
    parameters: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: {
        path: {
          description: 'Directory to list, relative to the workspace root. Defaults to "." (the workspace root).',
          type: "string",
        },
        depth: {
          description: "How many directory levels to descend: 1 lists only the directory itself. Defaults to 2.",
          type: "integer",
          minimum: 1,
          maximum: 10,
        },
      },
      additionalProperties: false,
    },
  },
};

/** What one stream chunk adds to the reply being assembled. */
function applyChunk(reply, chunk, onText) {
  if (chunk.usage) reply.usage = chunk.usage;
  const choice = chunk.choices?.[0];
  if (!choice) return;
  if (choice.delta?.content) {
    reply.text += choice.delta.content;
    onText(choice.delta.content);
  }
  for (const tc of choice.delta?.tool_calls ?? []) {
    reply.calls[tc.index] ??= { id: "", name: "", input: "" };
    const call = reply.calls[tc.index];
    if (tc.id) call.id = tc.id;
    if (tc.function?.name) call.name += tc.function.name;
    if (tc.function?.arguments) call.input += tc.function.arguments;
  }
  if (choice.finish_reason) reply.finish = choice.finish_reason;
}

// The request goes through the SDK (its retries and errors) as our server sends it: the
// encoded body, the raw response read with our SSE parser (src/model/sse-events.ts), the
// parts our server uses. FIXTURE_SDK_ITERATOR=1: the SDK's own chunk iterator instead (the
// heavier parts of this fixture's earlier figures).
const sdkIterator = env.FIXTURE_SDK_ITERATOR === "1";

/** One streamed model request: text deltas go to `onText`; resolves with the assembled reply. */
async function complete(messages, onText) {
  const request = {
    model,
    messages,
    tools: [LIST_FILES],
    stream: true,
    stream_options: { include_usage: true },
  };
  const reply = { text: "", calls: [], finish: null, usage: null };
  if (sdkIterator) {
    for await (const chunk of await client.chat.completions.create(request)) applyChunk(reply, chunk, onText);
    return reply;
  }
  const response = await client
    .post("/chat/completions", {
      body: Buffer.from(JSON.stringify(request)),
      headers: { "content-type": "application/json" },
      stream: true,
    })
    .asResponse();
  const parser = new SseParser(() => 8 * 1024 * 1024);
  const events = [];
  let done = false;
  // Read to the body's end (after [DONE] too) so that the connection goes back to the pool.
  for await (const bytes of response.body) {
    if (done) continue;
    parser.push(bytes, events);
    for (const event of events) {
      if (event.data === "[DONE]") {
        done = true;
        break;
      }
      applyChunk(reply, JSON.parse(event.data), onText);
    }
    events.length = 0;
  }
  return reply;
}

// ---------- HTTP ----------
const app = Fastify({ logger: false, forceCloseConnections: true });
await app.register(fastifySSE, {
  heartbeatInterval: 15_000,
  serializer: (data) => (typeof data === "string" ? data : JSON.stringify(data)),
});

app.get("/healthz", async () => ({ status: "ok" }));

app.post("/sessions", async (_request, reply) => {
  const id = newId("ses");
  commit(() => sql.session.run(id, id, new Date().toISOString()));
  await mkdir(join(workspaceRoot, id));
  return reply.status(201).send({ id });
});

app.post("/sessions/:id/runs", { sse: { kind: "dual" } }, async (request, reply) => {
  const sse = reply.sse;
  if (!sse) return reply.status(406).send({ error: "this fixture only streams (Accept: text/event-stream)" });
  const sessionId = request.params.id;
  const input = String(request.body?.input ?? "");
  const runId = newId("run");
  const createdAt = new Date().toISOString();
  const started = performance.now();
  let seq = 0;
  let msgSeq = 0;

  // Events of one commit (or one event-loop turn) leave in one socket write, as in src/http/sse.ts.
  const raw = reply.raw;
  let corked = false;
  const uncork = () => {
    corked = false;
    raw.uncork();
  };
  const send = (frame) => {
    if (!sse.isConnected) return; // a client leaving does not stop the run
    if (!corked) {
      corked = true;
      raw.cork();
      setImmediate(uncork);
    }
    sse.send(frame).catch(() => {});
  };
  /** A new event: its frame (the data is the JSON stored and sent). */
  const event = (type, body) => {
    const n = ++seq;
    return {
      id: String(n),
      event: type,
      data: JSON.stringify({ type, ...body, runId, seq: n, at: new Date().toISOString() }),
    };
  };
  /** A new event, stored (inside the caller's transaction). */
  const stored = (type, body) => {
    const frame = event(type, body);
    sql.event.run(runId, seq, type, frame.data);
    return frame;
  };
  /** A text delta: sent at once, or (FIXTURE_STORE_DELTAS) once stored. */
  const onText = (text) => {
    const frame = event("text.delta", { text });
    if (storeDeltas) storeDelta(runId, seq, frame, send);
    else send(frame);
  };
  /** Stores a message and its `message` event; returns the event's frame. */
  const storeMessage = (role, content, { toolCalls = null, toolCallId = null, extra = {} } = {}) => {
    const message = { id: newId("msg"), role, content, ...extra, sessionId, runId, seq: ++msgSeq };
    message.createdAt = new Date().toISOString();
    const calls = toolCalls && JSON.stringify(toolCalls);
    sql.message.run(runId, message.seq, message.id, role, content, calls, toolCallId, message.createdAt);
    return stored("message", { message });
  };

  // 1. The run, the user's message, turn 1.
  let frames;
  try {
    frames = commit(() => {
      sql.run.run(runId, sessionId, input, createdAt);
      return [stored("run.started", {}), storeMessage("user", input), stored("turn.started", { turn: 1 })];
    });
  } catch (err) {
    if (err.code === "SQLITE_CONSTRAINT_FOREIGNKEY") return reply.status(404).send({ error: "no such session" });
    throw err;
  }
  sse.sendHeaders();
  for (const frame of frames) send(frame);

  // 2. Model request 1: the tool call.
  const history = [{ role: "user", content: input }];
  const first = await complete(history, onText);
  if (storeDeltas && pendingDeltas.length) flushDeltas();
  const calls = first.calls; // [{id, name, input}]
  send(commit(() => storeMessage("assistant", first.text, { toolCalls: calls, extra: { toolCalls: calls } })));
  history.push({
    role: "assistant",
    content: first.text || null,
    tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.input } })),
  });

  // 3. The tool: list the session's workspace.
  const call = calls[0];
  send(commit(() => stored("tool.started", { toolCallId: call.id, tool: call.name })));
  const toolAt = performance.now();
  const entries = await readdir(join(workspaceRoot, sessionId), { withFileTypes: true });
  const output = entries.length
    ? entries.map((e) => e.name + (e.isDirectory() ? "/" : "")).join("\n")
    : '(no files or directories in ".")';
  const toolMs = Math.round(performance.now() - toolAt);
  const metadata = {
    errorCode: null,
    retryable: false,
    durationMs: toolMs,
    outputChars: output.length,
    truncated: false,
  };
  const extra = { toolCallId: call.id, isError: false, metadata };
  frames = commit(() => [
    storeMessage("tool", output, { toolCallId: call.id, extra }),
    stored("turn.started", { turn: 2 }),
  ]);
  for (const frame of frames) send(frame);
  history.push({ role: "tool", tool_call_id: call.id, content: output });

  // 4. Model request 2: the final text (its deltas sent, stored with FIXTURE_STORE_DELTAS), then the run's end.
  const second = await complete(history, onText);
  if (storeDeltas && pendingDeltas.length) flushDeltas();
  const finishedAt = new Date().toISOString();
  const tokens = (k) => (first.usage?.[k] ?? 0) + (second.usage?.[k] ?? 0);
  const [inputTokens, outputTokens] = [tokens("prompt_tokens"), tokens("completion_tokens")];
  const durationMs = Math.round(performance.now() - started);
  const stats = { modelCalls: 2, toolCalls: 1, turns: 2, inputTokens, outputTokens, durationMs };
  const run = { id: runId, sessionId, status: "finished", stopReason: "complete", error: null, input };
  frames = commit(() => {
    const list = [storeMessage("assistant", second.text)];
    sql.finish.run("complete", JSON.stringify(stats), finishedAt, runId);
    list.push(
      stored("run.finished", { run: { ...run, maxTurns: 20, contextMaxChars: null, stats, createdAt, finishedAt } }),
    );
    return list;
  });
  for (const frame of frames) send(frame);
  // Returning ends the response (@fastify/sse closes it), flushing anything still corked.
});

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.once(signal, async () => {
    await app.close();
    db.close();
    process.exit(0); // a normal exit, so --cpu-prof writes its profile
  });
}
await app.listen({ port: Number(env.PORT ?? 3000), host: env.HOST || "127.0.0.1", backlog: 4096 });
