// `npm run bench:loop`: the agent loop's own overhead per turn, against the bare cost
// of one SQLite commit on the same database file. A benchmark, not a test: it prints
// figures and asserts nothing about time.
//
// What runs: the production glue, unchanged. A real RunManager (src/runs/run-manager.ts)
// drives runAgent with the real RunRecorder, EventHub, approval gate, ledger writes and
// step traces, over the SQLite Store on a temp file opened by openDatabase (WAL,
// synchronous=NORMAL, migrations). Only the model is fake: an in-process ModelClient that answers at once
// (first request of a run: one call of the no-op read-only tool; then the text "done").
//
// What a "turn" is: the wall time from the run's first model request to its second.
// That interval holds exactly one model request returning, the assistant message with
// its call committed (message + `message` event + ledger `proposed`), argument
// validation, the approval gate (ledger read + policy), `tool.started` written with its
// ledger mark, the tool executed, its result committed (message + event + ledger
// `finished`, with the previous step trace in the same transaction), and the next
// request's context built. The commits made through the store inside turns (every write
// of the run's progress is one Store.commitRun) are counted and printed.
//
// Why many 1-turn runs (each in a fresh session) rather than one long run: every sample
// then does the same work, while in one long run the history grows and each turn copies
// and measures a longer context (O(history)), which would mix history size into the
// per-turn figure. BENCH_TOOL_TURNS=K makes each run do K tool turns before "done"
// (all K intervals are sampled), to look at the steady state of longer runs.
//
// A second measurement, "the loop alone", runs runAgent itself with the same instant model
// and tool, and a `commit` that writes each message and its `message` event in one
// transaction: the issue's own description of a turn ("it commits two messages and their
// events"), without the production glue (ledger, recorder, approval gate, step traces,
// the durable tool start). Comparing the two shows what the glue costs.
//
// Env: BENCH_RUNS (default 3000), BENCH_WARMUP_RUNS (500), BENCH_COMMITS_PER_RUN (2,
// bare commits measured interleaved with the runs), BENCH_TOOL_TURNS (1).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import pino from "pino";
import { z } from "zod";
import { approveAll } from "../src/agent/approval.js";
import type { ModelClient, ModelRequest, ModelResult } from "../src/agent/model.js";
import { runAgent } from "../src/agent/run-agent.js";
import { emptyStats } from "../src/agent/stats.js";
import type { StepTrace } from "../src/agent/step-trace.js";
import { type AgentTool, toolOk } from "../src/agent/tool.js";
import type { StoredMessage } from "../src/domain/stored-message.js";
import { newId } from "../src/ids.js";
import { EventHub } from "../src/runs/event-hub.js";
import { RunManager } from "../src/runs/run-manager.js";
import { openDatabase } from "../src/store/database.js";
import { defaultRunLimits } from "../src/store/runs.js";
import { createSqliteStore } from "../src/store/sqlite-store.js";
import type { SessionRecord, Store } from "../src/store/store.js";

const envInt = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const value = raw === undefined || raw.trim() === "" ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
  return value;
};
const RUNS = envInt("BENCH_RUNS", 3000);
const WARMUP_RUNS = envInt("BENCH_WARMUP_RUNS", 500);
const COMMITS_PER_RUN = Math.max(1, envInt("BENCH_COMMITS_PER_RUN", 2));
const TOOL_TURNS = Math.max(1, envInt("BENCH_TOOL_TURNS", 1));

const TOOL_NAME = "noop";

/** CPU time of this process so far (all its threads: main, GC helpers), µs. */
const cpuNowUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** A read-only tool that does nothing: allowed by the default policy, never asks. */
const noopTool: AgentTool<Record<string, never>> = {
  name: TOOL_NAME,
  description: "Does nothing and returns ok.",
  inputSchema: z.object({}).strict() as unknown as z.ZodType<Record<string, never>>,
  readOnly: true,
  execute: async () => toolOk("ok"),
};

/**
 * Answers at once. A run's requests are told apart by the history: fewer than
 * TOOL_TURNS tool results after the last user message -> one tool call, else "done".
 * Records the time between consecutive requests of a run: one turn each.
 */
class InstantModel implements ModelClient {
  readonly turnMs: number[] = [];
  readonly turnCpuMs: number[] = [];
  readonly turnCommits: number[] = [];
  #lastCommits = 0;
  recording = false;
  #lastRequestAt = 0;
  #lastCpuUs = 0;
  #calls = 0;

  async complete(request: ModelRequest): Promise<ModelResult> {
    // The wall interval of a turn excludes the bench's own getrusage call (~10-15 µs in this
    // VM): it ends before the call here and the next one starts after it. The CPU interval
    // cannot exclude it and includes one call.
    const now = performance.now();
    const cpuUs = cpuNowUs();
    const startOfNext = performance.now();
    const messages = request.messages;
    let lastUser = -1;
    for (let i = 0; i < messages.length; i++) if (messages[i]?.role === "user") lastUser = i;
    let results = 0;
    for (let i = lastUser + 1; i < messages.length; i++) if (messages[i]?.role === "tool") results++;
    if (results > 0 && this.recording) {
      this.turnMs.push(now - this.#lastRequestAt);
      this.turnCpuMs.push((cpuUs - this.#lastCpuUs) / 1000);
      this.turnCommits.push(commitCount - this.#lastCommits);
    }
    this.#lastRequestAt = startOfNext;
    this.#lastCpuUs = cpuUs;
    this.#lastCommits = commitCount;
    const timing = { latencyMs: 0, firstTokenMs: 0 };
    if (results < TOOL_TURNS) {
      return {
        ok: true,
        text: "",
        toolCalls: [{ id: `call_${++this.#calls}`, name: TOOL_NAME, input: "{}" }],
        finishReason: "tool_calls",
        usage: { inputTokens: 10, outputTokens: 5 },
        timing,
      };
    }
    request.onTextDelta?.("done");
    return {
      ok: true,
      text: "done",
      toolCalls: [],
      finishReason: "stop",
      usage: { inputTokens: 10, outputTokens: 3 },
      timing,
    };
  }
}

// ---------- statistics ----------
const percentile = (sorted: readonly number[], p: number): number =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number);
interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
}
function summarize(ms: readonly number[]): Summary {
  const us = ms.map((x) => x * 1000).sort((a, b) => a - b);
  return {
    n: us.length,
    p50: percentile(us, 50),
    p90: percentile(us, 90),
    p99: percentile(us, 99),
    mean: us.reduce((a, b) => a + b, 0) / (us.length || 1),
  };
}
const fmt = (us: number): string => (us >= 100 ? us.toFixed(0) : us.toFixed(1)).padStart(7);
const line = (label: string, s: Summary): string =>
  `  ${label.padEnd(34)} p50 ${fmt(s.p50)} µs   p90 ${fmt(s.p90)} µs   p99 ${fmt(s.p99)} µs   mean ${fmt(s.mean)} µs   (n=${s.n})`;

// ---------- setup ----------
const dir = mkdtempSync(join(process.env.BENCH_DB_DIR || os.tmpdir(), "bench-loop-"));
const dbPath = join(dir, "agent.db");
const db = openDatabase({ path: dbPath });
const sqlite = createSqliteStore(db);
/** Commits made through the store so far (the bare commits below bypass it). */
let commitCount = 0;
const store: Store = {
  ...sqlite,
  commitRun: (runId, changes, events) => {
    commitCount++;
    return sqlite.commitRun(runId, changes, events);
  },
};
const model = new InstantModel();
const manager = new RunManager({
  store,
  hub: new EventHub(),
  model,
  defaultModel: "fake-model",
  toolsFor: () => [noopTool],
  maxConcurrentRuns: 64,
  approvalTimeoutMs: 900_000,
  logger: pino({ level: "silent" }),
});

db.exec("CREATE TABLE IF NOT EXISTS bench_scratch (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, data TEXT NOT NULL)");
const scratchInsert = db.prepare("INSERT INTO bench_scratch (run_id, data) VALUES (?, ?)");
const scratchPayload = JSON.stringify({ type: "message", text: "x".repeat(120) });
const bareCommit = db.transaction((runId: string) => scratchInsert.run(runId, scratchPayload));

const commitMs: number[] = [];
const commitCpuMs: number[] = [];
const runMs: number[] = [];

async function newSession(): Promise<SessionRecord> {
  const session: SessionRecord = {
    id: newId("ses"),
    owner: null,
    system: null,
    model: null,
    tools: null,
    approval: null,
    workspace: "bench",
    workspaceShared: true,
    providerProfile: null,
    planning: false,
    metadata: null,
    webhook: null,
    createdAt: new Date().toISOString(),
  };
  await store.sessions.insert(session);
  return session;
}

/** A run row in `session`, as the run manager would insert it (outside the timed part). */
async function newRunRecord(session: SessionRecord, maxTurns: number): Promise<string> {
  const runId = newId("run");
  const record = {
    id: runId,
    sessionId: session.id,
    status: "running",
    stopReason: null,
    error: null,
    input: "hi",
    maxTurns,
    contextMaxChars: null,
    stopDetail: null,
    ...defaultRunLimits(),
    stats: emptyStats(),
    createdAt: new Date().toISOString(),
    finishedAt: null,
    approval: null,
    idempotencyKey: null,
    webhook: null,
  } as const;
  await store.runs.create(record, []);
  return runId;
}

async function oneRun(record: boolean): Promise<void> {
  const session = await newSession();
  const t0 = performance.now();
  const { run } = await manager.start({ session, input: "hi", maxTurns: TOOL_TURNS + 1 });
  const finished = await manager.waitForFinish(run.id);
  const t1 = performance.now();
  if (finished.stopReason !== "complete") {
    throw new Error(`run ${run.id} ended ${finished.stopReason}: ${JSON.stringify(finished.error)}`);
  }
  if (record) runMs.push(t1 - t0);
  for (let i = 0; i < COMMITS_PER_RUN; i++) {
    const u0 = cpuNowUs();
    const c0 = performance.now();
    bareCommit(run.id);
    const c1 = performance.now();
    const u1 = cpuNowUs();
    if (record) {
      commitMs.push(c1 - c0);
      commitCpuMs.push((u1 - u0) / 1000);
    }
  }
}

/** One run of runAgent alone: each message committed with its event in one commitRun. */
async function loopAloneRun(loopModel: InstantModel): Promise<void> {
  const session = await newSession();
  const runId = await newRunRecord(session, TOOL_TURNS + 1);
  let messageSeq = 0;
  let eventSeq = 0;
  const result = await runAgent({
    model: loopModel,
    tools: [noopTool],
    history: [],
    input: "hi",
    beforeToolCall: approveAll,
    commit: async (item) => {
      if (item.type !== "message") return;
      const at = new Date().toISOString();
      const stored = {
        ...item.message,
        sessionId: session.id,
        runId,
        seq: ++messageSeq,
        createdAt: at,
      } as StoredMessage;
      await store.commitRun(
        runId,
        [{ kind: "message", message: stored }],
        [{ type: "message", message: stored, runId, seq: ++eventSeq, at }],
      );
    },
    emit: () => {},
    signal: new AbortController().signal,
    maxTurns: TOOL_TURNS + 1,
    newId: () => newId("msg"),
  });
  if (result.stopReason !== "complete") throw new Error(`loop-alone run ended ${result.stopReason}`);
}

/** The cost of one message + event commit, sampled once per storeAloneTurn. */
const messageCommitMs: number[] = [];

/**
 * The store alone: the commits a production turn makes, with the same changes and rows of
 * the same shape, and nothing else (no loop, no model, no glue). Three commits: the
 * assistant message (with its ledger rows and stats), its event and the turn's step trace;
 * the durable tool start with its event and stats; the tool result with its ledger mark,
 * its event and the step trace's tool part. Returns the wall time of the three, in ms.
 */
async function storeAloneTurn(): Promise<number> {
  const session = await newSession();
  const runId = await newRunRecord(session, 2);
  const at = new Date().toISOString();
  const callId = `call_${runId}`;
  const step: StepTrace = {
    turn: 1,
    context: { messageCount: 1, estimatedTokens: 10, trimmedCount: 0, includedFiles: [] },
    model: {
      latencyMs: 0,
      firstTokenMs: 0,
      finishReason: "tool_calls",
      usage: { inputTokens: 10, outputTokens: 5 },
      error: null,
    },
    tools: [],
  };
  const assistant: StoredMessage = {
    id: newId("msg"),
    role: "assistant",
    content: "",
    toolCalls: [{ id: callId, name: TOOL_NAME, input: "{}" }],
    sessionId: session.id,
    runId,
    seq: 2,
    createdAt: at,
  };
  const result: StoredMessage = {
    id: newId("msg"),
    role: "tool",
    content: "ok",
    toolCallId: callId,
    isError: false,
    metadata: { errorCode: null, retryable: false, durationMs: 0, outputChars: 2, truncated: false },
    sessionId: session.id,
    runId,
    seq: 3,
    createdAt: at,
  } as StoredMessage;
  const stats = { ...emptyStats(), modelCalls: 1, turns: 1, inputTokens: 10, outputTokens: 5 };
  const t0 = performance.now();
  await store.commitRun(
    runId,
    [
      { kind: "step", step },
      { kind: "stats", stats },
      { kind: "message", message: assistant },
      { kind: "stats", stats },
    ],
    [
      { type: "turn.started", turn: 1, runId, seq: 2, at },
      { type: "message", message: assistant, runId, seq: 3, at },
    ],
  );
  await store.commitRun(
    runId,
    [
      { kind: "toolCall.started", toolCallId: callId, at },
      { kind: "stats", stats: { ...stats, toolCalls: 1 } },
    ],
    [{ type: "tool.started", toolCallId: callId, tool: TOOL_NAME, runId, seq: 4, at }],
  );
  const toolStep: StepTrace = {
    ...step,
    tools: [
      {
        toolCallId: callId,
        tool: TOOL_NAME,
        fingerprint: "0000000000000000",
        status: "ok",
        errorCode: null,
        durationMs: 0,
        outputChars: 2,
        truncated: false,
      },
    ],
  };
  await store.commitRun(
    runId,
    [
      { kind: "message", message: result },
      { kind: "step", step: toolStep },
      { kind: "stats", stats },
    ],
    [{ type: "message", message: result, runId, seq: 5, at }],
  );
  const t1 = performance.now();
  // One message and its `message` event, as the loop alone commits them: what the issue's
  // "it commits two messages and their events" costs per message on this file.
  const final: StoredMessage = {
    id: newId("msg"),
    role: "assistant",
    content: "done",
    toolCalls: [],
    sessionId: session.id,
    runId,
    seq: 4,
    createdAt: at,
  } as StoredMessage;
  const m0 = performance.now();
  await store.commitRun(
    runId,
    [{ kind: "message", message: final }],
    [{ type: "message", message: final, runId, seq: 6, at }],
  );
  messageCommitMs.push(performance.now() - m0);
  return t1 - t0;
}

// ---------- run ----------
const cpu = os.cpus()[0]?.model?.trim() ?? "unknown cpu";
console.log("bench:loop: agent loop overhead per turn vs one bare SQLite commit");
console.log(`  machine: ${cpu} x${os.cpus().length}, node ${process.version}, ${os.platform()} ${os.arch()}`);
console.log(`  database: ${dbPath} (openDatabase: WAL, synchronous=NORMAL, foreign_keys=ON)`);
console.log(
  `  path: real RunManager + RunRecorder + EventHub + approval gate, in-process instant model, tool "${TOOL_NAME}" (read-only, returns "ok")`,
);
console.log(
  `  runs: ${WARMUP_RUNS} warm-up + ${RUNS} measured, sequential, ${TOOL_TURNS} tool turn(s) each, fresh session each; ${COMMITS_PER_RUN} bare commits after each run`,
);

const load0 = os.loadavg()[0] ?? 0;
for (let i = 0; i < WARMUP_RUNS; i++) await oneRun(false);
model.recording = true;
const cpu0 = process.cpuUsage();
const wall0 = performance.now();
for (let i = 0; i < RUNS; i++) await oneRun(true);
const wall = performance.now() - wall0;
const cpuUsed = process.cpuUsage(cpu0);
model.recording = false;

const loopModel = new InstantModel();
for (let i = 0; i < WARMUP_RUNS; i++) await loopAloneRun(loopModel);
loopModel.recording = true;
for (let i = 0; i < RUNS; i++) await loopAloneRun(loopModel);
loopModel.recording = false;

const storeAloneMs: number[] = [];
for (let i = 0; i < WARMUP_RUNS; i++) await storeAloneTurn();
for (let i = 0; i < RUNS; i++) storeAloneMs.push(await storeAloneTurn());

const turn = summarize(model.turnMs);
const commit = summarize(commitMs);
const turnCpu = summarize(model.turnCpuMs);
const commitCpu = summarize(commitCpuMs);
const wholeRun = summarize(runMs);
const load1 = os.loadavg()[0] ?? 0;
console.log("");
console.log("  wall time:");
console.log(line("turn (1 model req + 1 tool call)", turn));
console.log(line("bare commit (1-row transaction)", commit));
console.log(line("whole run (start -> run.finished)", wholeRun));
console.log("  CPU time of this process (getrusage, all threads) over the same intervals:");
console.log(line("turn", turnCpu));
console.log(line("bare commit", commitCpu));
console.log("");
const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`;
console.log(
  `  ratio turn/commit (target <= 10x): wall p50 ${ratio(turn.p50, commit.p50)}, wall p99 ${ratio(turn.p99, commit.p99)}; ` +
    `CPU p50 ${ratio(turnCpu.p50, commitCpu.p50)}, CPU mean ${ratio(turnCpu.mean, commitCpu.mean)}`,
);
console.log(
  `  target ${turn.p50 / commit.p50 <= 10 ? "MET" : "MISSED"} at p50 (wall). ` +
    `Commits per turn: ${(model.turnCommits.reduce((a, b) => a + b, 0) / Math.max(1, model.turnCommits.length)).toFixed(2)} on average.`,
);
console.log(
  `  process: ${(RUNS / (wall / 1000)).toFixed(0)} runs/s sequential, CPU ${((cpuUsed.user + cpuUsed.system) / 1000 / RUNS).toFixed(3)} ms/run (incl. ${COMMITS_PER_RUN} bare commits); ` +
    `load average at start ${load0.toFixed(2)}, at end ${load1.toFixed(2)} on ${os.cpus().length} CPUs` +
    (Math.max(load0, load1) > os.cpus().length * 0.75 ? " (BUSY MACHINE: wall tails include waiting for a CPU)" : ""),
);

const loopTurn = summarize(loopModel.turnMs);
const loopCommits = loopModel.turnCommits.reduce((a, b) => a + b, 0) / Math.max(1, loopModel.turnCommits.length);
console.log("");
console.log(
  "  the loop alone (runAgent; each message and its event in one commitRun; no recorder, approval gate, step traces):",
);
console.log(line("turn (1 model req + 1 tool call)", loopTurn));
console.log(line("turn, CPU", summarize(loopModel.turnCpuMs)));
console.log(
  `  ratio turn/commit: wall p50 ${ratio(loopTurn.p50, commit.p50)} (${loopCommits.toFixed(2)} commits per turn); ` +
    `the production glue adds ${fmt(turn.p50 - loopTurn.p50)} µs per turn at p50`,
);

const storeTurn = summarize(storeAloneMs);
console.log("");
console.log("  the store alone (the production turn's three commits, same changes and row shapes, nothing else):");
console.log(line("three transactions", storeTurn));
const messageCommit = summarize(messageCommitMs);
console.log(line("one message + its event, one tx", messageCommit));
console.log(
  `  ratio to one bare commit: three transactions ${ratio(storeTurn.p50, commit.p50)}, one message + event ${ratio(messageCommit.p50, commit.p50)} (p50); the rest of the production turn (loop, glue) is ${fmt(turn.p50 - storeTurn.p50)} µs at p50`,
);

db.close();
rmSync(dir, { recursive: true, force: true });
