// `npm run bench:observer`: what observing the runs (metrics, and traces when configured)
// adds to their commit path. A benchmark, not a test: it prints figures.
//
// A run's writes are replayed against a store whose commitRun does no I/O (it only returns
// the stored events, as a real store does), then published to one watcher: a streamed run of
// BENCH_DELTAS text deltas (one commit each, as with a token every 20 ms) between the commits
// of a turn with one tool call and a final answer. Five ways, alternated round by round:
// bare (the store and hub as they are), seams (wrapped, reporting to NO_OBSERVER), digest
// (the facts derived, for no sink), observed (the metrics), observed and traced (the metrics
// and the run tracer, its spans made and dropped: no exporter). Printed: the median over
// rounds of the CPU time per run, and what each way adds per commit.
//
// Env: BENCH_RUNS (runs per round, default 200), BENCH_ROUNDS (15), BENCH_DELTAS (200).
import { TracerProvider } from "@opentelemetry/sdk-trace";
import type { RunEvent, RunEventBody } from "../src/domain/run-events.js";
import type { StoredMessage } from "../src/domain/stored-message.js";
import { Metrics } from "../src/observability/metrics.js";
import { observedSeams } from "../src/observability/observed-seams.js";
import { NO_OBSERVER } from "../src/observability/observer.js";
import { RunDigest, type RunFacts } from "../src/observability/run-digest.js";
import { RunTracer } from "../src/observability/run-tracer.js";
import { EventHub } from "../src/runs/event-hub.js";
import type { RunChange, Store, StoredEvent } from "../src/store/store.js";

const envInt = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};
const RUNS = envInt("BENCH_RUNS", 200);
const ROUNDS = envInt("BENCH_ROUNDS", 15);
const DELTAS = envInt("BENCH_DELTAS", 200);

const stored = (events: readonly RunEvent[]): StoredEvent[] =>
  events.map((e) => ({ seq: e.seq, type: e.type, data: JSON.stringify(e) }));
const noIoStore = {
  runs: { create: async (_run: unknown, events: readonly RunEvent[]) => stored(events) },
  commitRun: async (_runId: string, _changes: readonly RunChange[], events: readonly RunEvent[]) => stored(events),
} as unknown as Store;

type Way = { store: Store; hub: EventHub };
const bare = (): Way => ({ store: noIoStore, hub: new EventHub() });
const observed = (sinks: (metrics: Metrics) => RunFacts[]): Way => {
  const metrics = new Metrics({ toolNames: ["list_files"] });
  return observedSeams(noIoStore, new RunDigest(sinks(metrics)));
};
const tracer = new RunTracer(Promise.resolve(new TracerProvider().getTracer("bench")), async () => ({
  sessionId: "ses_bench",
  model: "fake-model",
}));

const at = () => new Date().toISOString();
const message = (runId: string, m: Record<string, unknown>): StoredMessage =>
  ({ sessionId: "ses_bench", runId, seq: 1, createdAt: at(), id: "msg", ...m }) as unknown as StoredMessage;
const step = (turn: number): RunChange => ({
  kind: "step",
  step: {
    turn,
    context: { messageCount: 2, estimatedTokens: 10, trimmedCount: 0, includedFiles: [] },
    model: {
      latencyMs: 5,
      firstTokenMs: 1,
      finishReason: "stop",
      usage: { inputTokens: 10, outputTokens: 5 },
      error: null,
    },
    tools: [],
  },
});

/** One run's writes through `way`, each published to one watcher. */
async function run(way: Way, n: number): Promise<void> {
  const runId = `run_${n}`;
  let seq = 0;
  const unsubscribe = way.hub.subscribe(runId, () => {});
  const events = (...bodies: RunEventBody[]): RunEvent[] =>
    bodies.map((body) => ({ ...body, runId, seq: ++seq, at: at() }) as RunEvent);
  const commit = async (changes: RunChange[], ...bodies: RunEventBody[]) =>
    way.hub.publish(runId, await way.store.commitRun(runId, changes, events(...bodies)));
  const record = { id: runId, sessionId: "ses_bench" } as Parameters<Store["runs"]["create"]>[0];
  way.hub.publish(runId, await way.store.runs.create(record, events({ type: "run.started" })));
  await commit([], { type: "message", message: message(runId, { role: "user", content: "hi" }) });
  const call = { id: `call_${n}`, name: "list_files", input: "{}" };
  await commit(
    [step(1)],
    { type: "turn.started", turn: 1 },
    { type: "message", message: message(runId, { role: "assistant", content: "", toolCalls: [call] }) },
  );
  await commit([], { type: "tool.started", toolCallId: call.id, tool: call.name });
  const metadata = { errorCode: null, retryable: false, durationMs: 2, outputChars: 3, truncated: false };
  await commit([], {
    type: "message",
    message: message(runId, { role: "tool", toolCallId: call.id, content: "(no)", isError: false, metadata }),
  });
  await commit([], { type: "turn.started", turn: 2 });
  for (let i = 0; i < DELTAS; i++) await commit([], { type: "text.delta", text: "tok " });
  await commit([step(2)], { type: "message", message: message(runId, { role: "assistant", content: "done" }) });
  await commit([], {
    type: "run.finished",
    run: {
      id: runId,
      sessionId: "ses_bench",
      status: "finished",
      stopReason: "complete",
      error: null,
      stats: { inputTokens: 20, outputTokens: 10 },
    } as never,
  });
  unsubscribe();
}

const ways: Record<string, () => Way> = {
  bare,
  seams: () => observedSeams(noIoStore, NO_OBSERVER),
  digest: () => observed(() => []),
  observed: () => observed((metrics) => [metrics]),
  "observed+traced": () => observed((metrics) => [metrics, tracer]),
};
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
let n = 0;
for (let round = 0; round <= ROUNDS; round++) {
  for (const [name, make] of Object.entries(ways)) {
    const way = make();
    const start = process.cpuUsage();
    for (let i = 0; i < RUNS; i++) await run(way, n++);
    const used = process.cpuUsage(start);
    // Round 0 warms up.
    if (round > 0) samples[name]?.push((used.user + used.system) / RUNS);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const base = median(samples.bare ?? []);
const commitsPerRun = DELTAS + 8;
for (const [name, xs] of Object.entries(samples)) {
  const perRun = median(xs);
  const added = perRun - base;
  console.log(
    `${name.padEnd(16)} ${perRun.toFixed(1).padStart(8)} µs CPU per run (${commitsPerRun} commits)` +
      (name === "bare" ? "" : `, +${added.toFixed(1)} µs (+${(added / commitsPerRun).toFixed(2)} µs a commit)`),
  );
}
console.log(
  `summary: observing adds ${((median(samples.observed ?? []) - base) / commitsPerRun).toFixed(2)} µs a commit (metrics), ` +
    `${((median(samples["observed+traced"] ?? []) - base) / commitsPerRun).toFixed(2)} µs with traces`,
);
