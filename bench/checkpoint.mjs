#!/usr/bin/env node
import { join } from "node:path";
// `npm run bench:checkpoint` (builds first): the commit path under a streaming write load,
// with the WAL checkpointed by the store's worker thread (this build) vs SQLite's automatic
// checkpoint inside commits (BENCH_BASE_ROOT: another built checkout, whose store does that).
// In one process, on a temp file: BENCH_RUNS (100) runs each commit a text.delta event every
// 20 ms (one transaction each, as the recorder does for a token) for BENCH_SECONDS (10),
// BENCH_REPS (3) times each, in alternation. Figures: each commit's duration, each token's
// lateness (due -> committed: what a checkpoint stall adds to a token's latency), the event
// loop's delay, the checkpoints the worker reported. A benchmark, not a test; the last line
// sums it up.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { createHarness, envInt, fmt, machineLine, machineLoad, median, root } from "./harness.mjs";
import { percentile } from "./token-stamps.mjs";

const RUNS = envInt("BENCH_RUNS", 100);
const SECONDS = envInt("BENCH_SECONDS", 10);
const REPS = envInt("BENCH_REPS", 3);
const TOKEN_MS = 20;
const h = createHarness("bench-checkpoint");

async function subjectAt(label, checkout) {
  const load = (path) => import(pathToFileURL(join(checkout, "dist/src", path)).href);
  const [{ openSqliteStore }, { emptyStats }, { defaultRunLimits }] = await Promise.all([
    load("store/sqlite-store.js"),
    load("agent/stats.js"),
    load("store/runs.js"),
  ]);
  // A checkout whose store has no checkpoint worker ignores onCheckpoint (its checkpoints run inside commits).
  const open = (path, onCheckpoint) => openSqliteStore({ path, onCheckpoint });
  return { label, open, emptyStats, defaultRunLimits };
}

if (!process.env.BENCH_BASE_ROOT)
  h.fail("set BENCH_BASE_ROOT to a built checkout whose checkpoints run inside commits");
const subjects = [await subjectAt("worker", root), await subjectAt("base", process.env.BENCH_BASE_ROOT)];

async function once(subject, rep) {
  const checkpoints = [];
  const store = subject.open(join(h.tmp, `${subject.label}-${rep}.db`), (ms) => checkpoints.push(ms));
  const now = () => new Date().toISOString();
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    const id = `run_${i}`;
    await store.sessions.insert({
      id: `ses_${i}`,
      owner: null,
      system: null,
      model: null,
      tools: null,
      approval: null,
      workspace: `ses_${i}`,
      workspaceShared: false,
      providerProfile: null,
      planning: false,
      metadata: null,
      webhook: null,
      createdAt: now(),
    });
    await store.runs.create(
      {
        id,
        sessionId: `ses_${i}`,
        status: "running",
        stopReason: null,
        error: null,
        input: "hi",
        maxTurns: 5,
        contextMaxChars: null,
        stopDetail: null,
        ...subject.defaultRunLimits(),
        stats: subject.emptyStats(),
        createdAt: now(),
        finishedAt: null,
        approval: null,
        idempotencyKey: null,
        webhook: null,
      },
      [{ type: "run.started", runId: id, seq: 1, at: now() }],
    );
    runs.push({ id, seq: 2, due: performance.now() + (i * TOKEN_MS) / RUNS });
  }
  const commitMs = [];
  const lateMs = [];
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const end = performance.now() + SECONDS * 1000;
  const text = "a token of text, about as long as two or three of a model's ";
  await new Promise((resolve) => {
    const tick = () => {
      const t = performance.now();
      if (t >= end) return resolve();
      for (const run of runs) {
        if (run.due > t) continue;
        const started = performance.now();
        store.commitRun(run.id, [], [{ type: "text.delta", text, runId: run.id, seq: run.seq++, at: now() }]);
        const done = performance.now();
        commitMs.push(done - started);
        lateMs.push(done - run.due);
        run.due += TOKEN_MS;
      }
      setTimeout(tick, 1);
    };
    tick();
  });
  loop.disable();
  await store.close();
  const big = checkpoints.filter((ms) => ms > 5).length;
  return {
    commits: commitMs.length,
    commitP99: percentile(commitMs, 99),
    commitMax: commitMs.at(-1),
    lateP50: percentile(lateMs, 50),
    lateP99: percentile(lateMs, 99, true),
    lateMax: lateMs.at(-1),
    loopP99: loop.percentile(99) / 1e6,
    loopMax: loop.max / 1e6,
    checkpoints: checkpoints.length,
    checkpointMax: Math.max(0, ...checkpoints),
    big,
  };
}

console.log(`bench:checkpoint: ${RUNS} runs committing a token every ${TOKEN_MS} ms for ${SECONDS} s, ${REPS}x each`);
console.log(`  ${machineLine()}`);
const results = Object.fromEntries(subjects.map((s) => [s.label, []]));
for (let rep = 0; rep < REPS; rep++) {
  for (let k = 0; k < subjects.length; k++) {
    const subject = subjects[(k + rep) % subjects.length];
    const r = await once(subject, rep);
    results[subject.label].push(r);
    console.log(
      `  ${subject.label} #${rep + 1}: ${r.commits} commits, commit p99 ${fmt(r.commitP99, 2)} max ${fmt(r.commitMax)} ms; ` +
        `token lateness p50 ${fmt(r.lateP50)} p99 ${fmt(r.lateP99)} max ${fmt(r.lateMax)} ms; loop delay p99 ${fmt(r.loopP99)} ` +
        `max ${fmt(r.loopMax)} ms; worker checkpoints ${r.checkpoints} (max ${fmt(r.checkpointMax)} ms)`,
    );
  }
}
const line = subjects.map((s) => {
  const m = (key) => median(results[s.label].map((r) => r[key]));
  return `${s.label}: commit max ${fmt(m("commitMax"))} ms, token lateness p99 ${fmt(m("lateP99"))} max ${fmt(m("lateMax"))} ms, loop delay max ${fmt(m("loopMax"))} ms, checkpoint max ${fmt(m("checkpointMax"))} ms`;
});
console.log(`bench:checkpoint (medians of ${REPS}): ${line.join("; ")}; load average ${machineLoad()}`);
h.cleanup();
