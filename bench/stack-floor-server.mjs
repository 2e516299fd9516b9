#!/usr/bin/env node
// The stack floor: a benchmark fixture, NOT the product. A minimal server on the pinned
// stack (fastify + @fastify/sse, the openai SDK over our undici fetch from
// dist/src/model/upstream-fetch.js, better-sqlite3 with the product's pragmas, its locking
// mode aside: see FIXTURE_LOCKING) doing only the I/O a run of our server cannot avoid for
// the bench workload (one tool call, then text): the same HTTP requests, the same 12 SSE
// events with similar payloads, the same two streamed model requests, a commit for the
// session and five per run, one mkdir and one readdir. Not done: validation, auth,
// logging, run manager, recovery, approvals, a tool ledger, storing text deltas, idle
// timeouts and abort signals, the history of earlier runs. The model is offered the six
// tools the product offers (their specs made from dist/src/tools, encoded once, as our
// server does): their ~6.7 KB go with every model request; FIXTURE_ONE_TOOL=1 offers only
// list_files, as this fixture did before. Its CPU per run is a lower bound for what this
// stack costs per run, not the product.
//
//   BENCH_SERVER_ENTRY=bench/stack-floor-server.mjs node bench/http.mjs
//
// With FIXTURE_STORE_DELTAS=1 it also stores each text delta before sending it, as the laws
// make our server do (an event is stored before anyone sees it, and replays after a restart):
// the deltas of every run pending within 2 ms of the last write share one transaction (the
// group commit of src/store/group-commit.ts), and each frame is sent once its row committed.
// That is the floor for a server that keeps every event.
//
// With FIXTURE_SAME_ROWS=1 it stores what our server stores for a run, with our server's SQL:
// the schema of our migrations (runMigrations from dist/src/store/migrations.js, instead of
// this fixture's tables), the statements of src/store/*.ts with their values (a run row with
// its limits, lease and stats, the tool-call ledger, a step trace per turn, messages with
// their JSON columns, the text of a reply's deltas as one text.delta row), in our server's
// transactions (eight per run and one per session, where this fixture has five and one),
// and our server's reads outside them (the session, the history, the stream's backlog, the
// steered-input and queue checks). Writes are grouped as in src/store/group-commit.ts: a
// write waits for the end of the event-loop turn, or up to 2 ms after a group of several,
// and resolves once its group committed; the run goes on after each. The HTTP, SSE and model
// work are this fixture's (the same 12 events, in the same socket writes). What differs from
// the plain fixture is the SQL that our durability features make our server issue; what
// differs from our server is its JavaScript. Not with FIXTURE_STORE_DELTAS. bench/http.mjs
// gives its servers no FIXTURE_ variable: pass it in BENCH_SERVER_NODE_ARGS=--env-file=FILE,
// or measure this mode beside ours and the plain fixture as the alternation's base
// (BENCH_ALTERNATE=5 BENCH_BASE_ENV=FIXTURE_SAME_ROWS=1 BENCH_BASE_ROOT=DIR, DIR/dist/src/server.js
// a symbolic link to this file).
//
// Env: PORT (3000), HOST (127.0.0.1), DATABASE_PATH (./floor.db), WORKSPACE_ROOT or
// WORKSPACE_DIR (./workspaces), OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL (fake-model),
// FIXTURE_STORE_DELTAS, FIXTURE_SAME_ROWS, FIXTURE_SDK_ITERATOR, FIXTURE_LOCKING, FIXTURE_ONE_TOOL.
//
// FIXTURE_LOCKING=normal opens the database in SQLite's normal locking mode, as our server
// does (src/store/database.ts) so that its checkpoints run on a connection of their own, off
// the event loop; by default (exclusive) the fixture holds the file alone, as our server did
// before it checkpointed off the event loop. In normal mode every transaction, a lone read
// included, takes and drops its locks on the WAL index with system calls (a point read
// costs ~3x, bench/sqlite-locking.mjs); this mode does not checkpoint on a worker itself
// (its checkpoints stay in its commits, the same CPU on another thread).
import { mkdirSync } from "node:fs";
import { mkdir, readdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fastifySSE } from "@fastify/sse";
import Database from "better-sqlite3";
import Fastify from "fastify";
import OpenAI from "openai";
import { z } from "zod";
import { capRetryDelay } from "../dist/src/model/retry-delay-cap.js";
import { SseParser } from "../dist/src/model/sse-events.js";
import { upstreamFetch } from "../dist/src/model/upstream-fetch.js";
import { runMigrations } from "../dist/src/store/migrations.js";
import { workspaceTools } from "../dist/src/tools/index.js";

const env = process.env;
const workspaceRoot = resolve(env.WORKSPACE_ROOT || env.WORKSPACE_DIR || "./workspaces");
const model = env.OPENAI_MODEL || "fake-model";
const storeDeltas = env.FIXTURE_STORE_DELTAS === "1";
const sameRows = env.FIXTURE_SAME_ROWS === "1";
if (storeDeltas && sameRows)
  throw new Error("FIXTURE_SAME_ROWS stores the deltas as our server does: drop FIXTURE_STORE_DELTAS");

// ---------- SQLite: the pragmas of src/store/database.ts (its locking mode with FIXTURE_LOCKING=normal), a schema of its own (or ours) ----------
const dbPath = env.DATABASE_PATH || "./floor.db";
mkdirSync(dirname(resolve(dbPath)), { recursive: true });
mkdirSync(workspaceRoot, { recursive: true });
const db = new Database(dbPath, { timeout: 5000 });
const locking = env.FIXTURE_LOCKING || "exclusive";
if (locking !== "exclusive" && locking !== "normal") throw new Error("FIXTURE_LOCKING is exclusive or normal");
for (const pragma of [
  `locking_mode = ${locking.toUpperCase()}`,
  "journal_mode = WAL",
  "synchronous = NORMAL",
  "foreign_keys = ON",
  "wal_autocheckpoint = 10000",
  "cache_size = -8192",
  "temp_store = MEMORY",
])
  db.pragma(pragma);
/** Runs `fn` in one transaction (BEGIN/COMMIT). */
const commit = db.transaction((fn) => fn());
const sql = sameRows ? null : ownStatements();
const ours = sameRows ? ourStatements() : null;

/** This fixture's tables and statements. */
function ownStatements() {
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
  return {
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
}

/** FIXTURE_SAME_ROWS: our migrations' schema, and the statements of src/store/*.ts a run uses (their text as there). */
function ourStatements() {
  runMigrations(db);
  const NOW_MS = "((julianday('now') - 2440587.5) * 86400000.0)"; // leases.ts
  return {
    // sessions.ts
    session: db.prepare(
      `INSERT INTO sessions (id, owner, system, model, tools, approval, workspace, workspace_shared, provider_profile,
       planning, metadata, webhook, created_at)
     VALUES (@id, @owner, @system, @model, @tools, @approval, @workspace, @workspace_shared, @provider_profile,
       @planning, @metadata, @webhook, @created_at)`,
    ),
    sessionOwned: db.prepare("SELECT * FROM sessions WHERE id = ? AND owner IS ?"),
    // runs.ts
    run: db.prepare(
      `INSERT INTO runs (id, session_id, status, stop_reason, error, input, max_turns, context_max_chars, max_tokens,
       max_duration_ms, max_tool_calls, loop_repeat_limit, planning, approval, idempotency_key, stats, created_at,
       finished_at, webhook)
     VALUES (@id, @session_id, @status, NULL, NULL, @input, @max_turns, @context_max_chars, @max_tokens,
       @max_duration_ms, @max_tool_calls, @loop_repeat_limit, @planning, @approval, @idempotency_key, @stats,
       @created_at, NULL, @webhook)`,
    ),
    saveStats: db.prepare("UPDATE runs SET stats = ? WHERE id = ? AND status <> 'finished'"),
    finish: db.prepare(
      `UPDATE runs SET status = 'finished', stop_reason = @stop_reason, stop_detail = @stop_detail, error = @error,
       stats = @stats, finished_at = @finished_at
     WHERE id = @id AND status <> 'finished' AND (@from IS NULL OR status = @from)`,
    ),
    // leases.ts
    takeLease: db.prepare(
      `UPDATE runs SET owner_instance = @owner, epoch = 1, lease_expires_at = ${NOW_MS} + @ttl WHERE id = @id`,
    ),
    holds: db.prepare("SELECT 1 FROM runs WHERE id = ? AND epoch = ? AND owner_instance = ?"),
    // messages.ts
    message: db.prepare(
      `INSERT INTO messages (id, session_id, run_id, seq, role, content, tool_calls, tool_call_id, is_error, metadata, created_at)
     VALUES (@id, @session_id, @run_id, @seq, @role, @content, @tool_calls, @tool_call_id, @is_error, @metadata, @created_at)`,
    ),
    lastMessageSeq: db.prepare("SELECT seq FROM messages WHERE session_id = +? ORDER BY seq DESC LIMIT 1"),
    history: db.prepare("SELECT * FROM messages WHERE session_id = +? AND seq > +? ORDER BY seq"),
    // events.ts
    event: db.prepare("INSERT INTO run_events (run_id, seq, type, data) VALUES (?, ?, ?, ?)"),
    eventsAfter: db.prepare(
      "SELECT seq, type, data FROM run_events WHERE run_id = +? AND seq > +? ORDER BY seq LIMIT +?",
    ),
    // steps.ts
    step: db.prepare("INSERT OR REPLACE INTO run_steps (run_id, turn, data) VALUES (?, ?, ?)"),
    // tool-calls.ts
    proposeCall: db.prepare(
      `INSERT INTO tool_calls (run_id, id, ordinal, name, input, state, proposed_at)
     VALUES (@run, @id, (SELECT count(*) FROM tool_calls WHERE run_id = @run), @name, @input, 'proposed', @at)`,
    ),
    startCall: db.prepare("UPDATE tool_calls SET state = 'started', started_at = ? WHERE run_id = ? AND id = ?"),
    finishCall: db.prepare(
      "UPDATE tool_calls SET state = 'finished', finished_at = ?, result_message_id = ? WHERE run_id = ? AND id = ?",
    ),
    // queue.ts
    anyQueued: db.prepare("SELECT 1 FROM runs WHERE session_id = +? AND status = 'queued' LIMIT 1"),
    anyPendingInput: db.prepare("SELECT 1 FROM run_inputs WHERE run_id = +? LIMIT 1"),
  };
}

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

/**
 * FIXTURE_SAME_ROWS: `fn` (statements) in the next group's transaction, as our server's
 * writes (src/store/group-commit.ts): at the end of this event-loop turn, or, after a group
 * of several writes, GROUP_MS after it; resolves with its result once committed.
 */
let pendingWrites = [];
let writeFlush = null;
let lastWrites = { at: Number.NEGATIVE_INFINITY, size: 0 };
function flushWrites() {
  clearTimeout(writeFlush);
  clearImmediate(writeFlush);
  writeFlush = null;
  const group = pendingWrites;
  pendingWrites = [];
  lastWrites = { at: performance.now(), size: group.length };
  let results;
  try {
    results = commit(() => group.map((w) => w.fn()));
  } catch (err) {
    for (const w of group) w.reject(err);
    return;
  }
  group.forEach((w, i) => {
    w.resolve(results[i]);
  });
}
function write(fn) {
  return new Promise((resolve, reject) => {
    pendingWrites.push({ fn, resolve, reject });
    if (writeFlush) return;
    const wait = lastWrites.size > 1 ? lastWrites.at + GROUP_MS - performance.now() : 0;
    writeFlush = wait > 0 ? setTimeout(flushWrites, wait) : setImmediate(flushWrites);
  });
}

let idCounter = 0;
const newId = (prefix) => `${prefix}_${Date.now().toString(36)}${(++idCounter).toString(36).padStart(8, "0")}`;
/** FIXTURE_SAME_ROWS: the instance holding the runs' leases, and for how long a lease is taken (RUN_LEASE_MS). */
const instance = { id: newId("inst"), leaseMs: 30_000 };

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
/** The tools offered to the model: the product's six, as its requests carry them (see FIXTURE_ONE_TOOL). */
const TOOLS = workspaceTools
  .filter((tool) => env.FIXTURE_ONE_TOOL !== "1" || tool.name === "list_files")
  .map((tool) => {
    // Without the dialect's $schema, as our server sends them (src/model/wire-request.ts).
    const { $schema: _dialect, ...parameters } = z.toJSONSchema(tool.inputSchema, { io: "input" });
    return { type: "function", function: { name: tool.name, description: tool.description, parameters } };
  });
/** The tools' part of a request body, encoded once. */
const TOOLS_JSON = JSON.stringify(TOOLS);

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
    tools: TOOLS,
    stream: true,
    stream_options: { include_usage: true },
  };
  const reply = { text: "", calls: [], finish: null, usage: null };
  if (sdkIterator) {
    for await (const chunk of await client.chat.completions.create(request)) applyChunk(reply, chunk, onText);
    return reply;
  }
  // The body of JSON.stringify(request), its tools' part encoded once.
  const body = `{"model":${JSON.stringify(model)},"messages":${JSON.stringify(messages)},"tools":${TOOLS_JSON},"stream":true,"stream_options":{"include_usage":true}}`;
  const response = await client
    .post("/chat/completions", {
      body: Buffer.from(body),
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
  if (sameRows) await write(() => ours.session.run(sessionColumns(id)));
  else commit(() => sql.session.run(id, id, new Date().toISOString()));
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
  if (sameRows) {
    const eventSeq = () => seq;
    return runWithOurRows({ reply, sse, sessionId, input, runId, createdAt, started, send, event, onText, eventSeq });
  }

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
  const { output, metadata } = await listFiles(sessionId);
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

/** The list_files tool on the session's workspace: its output and its result's metadata. */
async function listFiles(sessionId) {
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
  return { output, metadata };
}

// ---------- FIXTURE_SAME_ROWS: a run's rows, statements and transactions as our server's ----------

/** A session's columns as sessionColumns (src/store/sessions.ts) makes them for POST /sessions {}. */
const sessionColumns = (id) => ({
  id,
  owner: null,
  system: null,
  model: null,
  tools: null,
  approval: null,
  workspace: id,
  workspace_shared: 0,
  provider_profile: null,
  planning: 0,
  metadata: null,
  webhook: null,
  created_at: new Date().toISOString(),
});

/** A run's stats as src/agent/stats.ts keeps them. */
const runStats = (modelCalls, toolCalls, turns, replies, started) => ({
  modelCalls,
  toolCalls,
  turns,
  inputTokens: replies.reduce((n, r) => n + (r.usage?.prompt_tokens ?? 0), 0),
  outputTokens: replies.reduce((n, r) => n + (r.usage?.completion_tokens ?? 0), 0),
  durationMs: Math.round(performance.now() - started),
});

/** A turn's step trace (src/agent/step-trace.ts): its context, its model request, its tools' outcomes. */
const stepTrace = (turn, history, reply, modelMs, tools) => ({
  turn,
  context: {
    messageCount: history.length,
    estimatedTokens: Math.ceil(history.reduce((n, m) => n + (m.content?.length ?? 0), 0) / 4),
    trimmedCount: 0,
    includedFiles: [],
  },
  model: {
    latencyMs: modelMs,
    firstTokenMs: modelMs,
    finishReason: reply.finish,
    usage: { inputTokens: reply.usage?.prompt_tokens ?? 0, outputTokens: reply.usage?.completion_tokens ?? 0 },
    error: null,
  },
  tools,
});

/**
 * The run of POST /sessions/:id/runs with FIXTURE_SAME_ROWS: the HTTP, SSE, model and tool
 * work of the plain fixture (the same frames, sent at the same points), its rows written with
 * our server's statements in our server's transactions (each `await write`), its reads as ours.
 */
async function runWithOurRows({
  reply,
  sse,
  sessionId,
  input,
  runId,
  createdAt,
  started,
  send,
  event,
  onText,
  eventSeq,
}) {
  /** A new event's frame, its row inserted (inside the caller's transaction). */
  const stored = (type, body) => {
    const frame = event(type, body);
    ours.event.run(runId, eventSeq(), type, frame.data);
    return frame;
  };
  /** The text a reply streamed as one text.delta row, as our server stores deltas that came together. */
  const storeReplyText = (text) => {
    if (!text) return;
    const seq = eventSeq(); // the reply's last delta sent
    const data = JSON.stringify({ type: "text.delta", text, runId, seq, at: new Date().toISOString() });
    ours.event.run(runId, seq, "text.delta", data);
  };
  let msgSeq;
  /** A message row (messageColumns of src/store/messages.ts); its event is stored after the other changes, as ours. */
  const storeMessage = (role, content, { toolCalls, toolCallId, metadata } = {}) => {
    const message = { id: newId("msg"), role, content };
    if (toolCalls) message.toolCalls = toolCalls;
    if (role === "tool") Object.assign(message, { toolCallId, isError: false, metadata });
    Object.assign(message, { sessionId, runId, seq: ++msgSeq, createdAt: new Date().toISOString() });
    ours.message.run({
      id: message.id,
      session_id: sessionId,
      run_id: runId,
      seq: message.seq,
      role,
      content,
      tool_calls: toolCalls ? JSON.stringify(toolCalls) : null,
      tool_call_id: role === "tool" ? toolCallId : null,
      is_error: role === "tool" ? 0 : null,
      metadata: role === "tool" ? JSON.stringify(metadata) : null,
      created_at: message.createdAt,
    });
    return message;
  };

  // 1. The session read; the run created, its lease taken; the history read; the user's
  // message; the stream's backlog read; turn 1.
  if (!ours.sessionOwned.get(sessionId, null)) return reply.status(404).send({ error: "no such session" });
  const run = {
    id: runId,
    session_id: sessionId,
    status: "running",
    input,
    max_turns: 20,
    context_max_chars: null,
    max_tokens: null,
    max_duration_ms: null,
    max_tool_calls: null,
    loop_repeat_limit: 3,
    planning: 0,
    approval: null,
    idempotency_key: null,
    stats: JSON.stringify(runStats(0, 0, 0, [], started)),
    created_at: createdAt,
    webhook: null,
  };
  const frames = [];
  frames.push(
    await write(() => {
      ours.run.run(run);
      ours.takeLease.run({ id: runId, owner: instance.id, ttl: instance.leaseMs });
      return stored("run.started", {});
    }),
  );
  msgSeq = ours.lastMessageSeq.get(sessionId)?.seq ?? 0;
  ours.history.all(sessionId, 0);
  frames.push(
    await write(() => {
      ours.holds.get(runId, 1, instance.id); // the fence, read once per lease
      const message = storeMessage("user", input);
      return stored("message", { message });
    }),
  );
  ours.anyPendingInput.get(runId);
  ours.eventsAfter.all(runId, 0, 500);
  frames.push(await write(() => stored("turn.started", { turn: 1 })));
  sse.sendHeaders();
  for (const frame of frames) send(frame);

  // 2. Model request 1: the tool call; its step, message, ledger row and stats.
  const history = [{ role: "user", content: input }];
  let modelAt = performance.now();
  const first = await complete(history, onText);
  const firstMs = Math.round(performance.now() - modelAt);
  const calls = first.calls; // [{id, name, input}]
  const call = calls[0];
  send(
    await write(() => {
      ours.step.run(runId, 1, JSON.stringify(stepTrace(1, history, first, firstMs, [])));
      const message = storeMessage("assistant", first.text, { toolCalls: calls });
      for (const c of calls)
        ours.proposeCall.run({ run: runId, id: c.id, name: c.name, input: c.input, at: message.createdAt });
      ours.saveStats.run(JSON.stringify(runStats(1, 0, 1, [first], started)), runId);
      storeReplyText(first.text);
      return stored("message", { message });
    }),
  );
  history.push({
    role: "assistant",
    content: first.text || null,
    tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.input } })),
  });

  // 3. The tool: started (ledger, stats), run, finished (its message, ledger); turn 2 (the step completed).
  send(
    await write(() => {
      ours.startCall.run(new Date().toISOString(), runId, call.id);
      ours.saveStats.run(JSON.stringify(runStats(1, 1, 1, [first], started)), runId);
      return stored("tool.started", { toolCallId: call.id, tool: call.name });
    }),
  );
  const { output, metadata } = await listFiles(sessionId);
  const toolFrames = [
    await write(() => {
      const message = storeMessage("tool", output, { toolCallId: call.id, metadata });
      ours.finishCall.run(message.createdAt, message.id, runId, call.id);
      return stored("message", { message });
    }),
  ];
  ours.anyPendingInput.get(runId);
  const outcome = {
    toolCallId: call.id,
    tool: call.name,
    fingerprint: "1e1fa6553d2e8040",
    status: "ok",
    errorCode: null,
    durationMs: metadata.durationMs,
    outputChars: metadata.outputChars,
    truncated: false,
  };
  toolFrames.push(
    await write(() => {
      ours.step.run(runId, 1, JSON.stringify(stepTrace(1, history.slice(0, 1), first, firstMs, [outcome])));
      return stored("turn.started", { turn: 2 });
    }),
  );
  for (const frame of toolFrames) send(frame);
  history.push({ role: "tool", tool_call_id: call.id, content: output });

  // 4. Model request 2: the final text (its deltas sent as they come), then the run's end in one write.
  modelAt = performance.now();
  const second = await complete(history, onText);
  const secondMs = Math.round(performance.now() - modelAt);
  const finishedAt = new Date().toISOString();
  const stats = runStats(2, 1, 2, [first, second], started);
  const view = { id: runId, sessionId, status: "finished", stopReason: "complete", error: null, input };
  const endFrames = await write(() => {
    ours.step.run(runId, 2, JSON.stringify(stepTrace(2, history, second, secondMs, [])));
    const message = storeMessage("assistant", second.text);
    ours.finish.run({
      id: runId,
      stop_reason: "complete",
      stop_detail: null,
      error: null,
      stats: JSON.stringify(stats),
      finished_at: finishedAt,
      from: null,
    });
    storeReplyText(second.text);
    const end = { run: { ...view, maxTurns: 20, contextMaxChars: null, stats, createdAt, finishedAt } };
    return [stored("message", { message }), stored("run.finished", end)];
  });
  for (const frame of endFrames) send(frame);
  ours.anyQueued.get(sessionId); // the session's queue, for a next run
}

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.once(signal, async () => {
    await app.close();
    db.close();
    process.exit(0); // a normal exit, so --cpu-prof writes its profile
  });
}
await app.listen({ port: Number(env.PORT ?? 3000), host: env.HOST || "127.0.0.1", backlog: 4096 });
