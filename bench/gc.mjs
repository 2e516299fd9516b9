#!/usr/bin/env node
// What garbage collection costs a run: the zero-latency workload of bench:http (a session and a
// streamed run with one list_files call, C concurrent runs), against our server, the stack
// fixture (bench/stack-floor-server.mjs) and, with BENCH_BASE_ROOT, another built checkout,
// each started with --trace-gc-nvp, in rotation. For each: server CPU per run by thread kind
// (/proc/<pid>/task: the main thread, V8's helper threads, libuv's pool, workers), and from
// V8's own lines over the measured runs: scavenges and full collections per 1,000 runs, the
// bytes alive at a scavenge and those it promoted to the old generation, per scavenge and per
// run, the bytes allocated per run, and the main thread's pauses per run. Bytes promoted per run that stay the same
// whatever the young generation's size (BENCH_NODE_ARGS=--max-semi-space-size=8) are objects
// kept alive until a full collection.
//
//   npm run bench:gc        (BENCH_N runs, default 3000, after BENCH_WARMUP, default 1000, at
//                            BENCH_C, default 25; BENCH_ROUNDS rotations, default 3;
//                            BENCH_NODE_ARGS: more node flags for every server;
//                            BENCH_TOKENS: instead, runs streaming that many tokens at one per
//                            BENCH_TOKEN_MS, default 20, as bench:stream, with the stack
//                            fixture storing its deltas beside it, e.g.
//                            BENCH_TOKENS=200 BENCH_N=200 BENCH_C=100 BENCH_WARMUP=20)
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createHarness, envInt, fmt, machineLine, median, root } from "./harness.mjs";

const N = envInt("BENCH_N", 3000);
const WARMUP = envInt("BENCH_WARMUP", 1000);
const C = envInt("BENCH_C", 25);
const ROUNDS = envInt("BENCH_ROUNDS", 3);
const extraArgs = (process.env.BENCH_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
const TOKENS = envInt("BENCH_TOKENS", 0);
const TOKEN_MS = envInt("BENCH_TOKEN_MS", 20);

const h = createHarness("bench-gc");
console.log(
  `bench:gc: ${N} runs at C=${C} (after ${WARMUP}), ${ROUNDS} rounds in rotation` +
    (TOKENS ? `, each streaming ${TOKENS} tokens at one per ${TOKEN_MS} ms` : ", zero latency"),
);
console.log(`  ${machineLine()}`);

/** CPU ms used so far by each kind of thread of `pid` (10 ms ticks). */
function threadCpuMs(pid) {
  const byKind = {};
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${task}/comm`, "utf8").trim();
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const kind =
        comm === "MainThread" || comm.startsWith("node")
          ? "main"
          : /V8/.test(comm)
            ? "v8"
            : /libuv/.test(comm)
              ? "libuv"
              : "other";
      byKind[kind] = (byKind[kind] ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // a thread that ended meanwhile
    }
  }
  return byKind;
}

/** The GC lines a server printed (--trace-gc-nvp), parsed: kind, pause, allocated (since the last collection), survived, promoted. */
function gcLog() {
  const entries = [];
  let pending = "";
  const onStdout = (text) => {
    pending += text;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const kind = / gc=(\w+) /.exec(line)?.[1];
      if (!kind) continue;
      const field = (name) => Number(new RegExp(` ${name}=([\\d.]+)`).exec(line)?.[1] ?? 0);
      entries.push({
        kind,
        pause: field("pause"),
        allocated: field("allocated"),
        survived: field("new_space_survived"),
        promoted: field("promoted"),
      });
    }
  };
  return { entries, onStdout };
}

const upstream = TOKENS
  ? await h.startStreamingUpstream({ tokens: TOKENS, intervalMs: TOKEN_MS })
  : await h.startUpstream(join(root, "bench/fake-upstream.mjs"), {
      FAKE_TOOL_NAME: "list_files",
      FAKE_TOOL_ARGS: "{}",
    });
const oursEnv = { MAX_CONCURRENT_RUNS: "100000" };
const fixtureEntry = join(root, "bench/stack-floor-server.mjs");
const subjects = [
  { name: "ours", entry: join(root, "dist/src/server.js"), cwd: root, env: oursEnv },
  { name: "stack", entry: fixtureEntry, cwd: root },
];
// Streaming, the floor of a server that stores every event: the fixture storing its deltas.
if (TOKENS) subjects.push({ name: "stored", entry: fixtureEntry, cwd: root, env: { FIXTURE_STORE_DELTAS: "1" } });
if (process.env.BENCH_BASE_ROOT) {
  const base = process.env.BENCH_BASE_ROOT;
  subjects.splice(1, 0, { name: "base", entry: join(base, "dist/src/server.js"), cwd: base, env: oursEnv });
}
for (const subject of subjects) {
  subject.log = gcLog();
  subject.server = await h.startServer({
    entry: subject.entry,
    label: subject.name,
    upstreamUrl: upstream.url,
    env: subject.env,
    nodeArgs: ["--trace-gc-nvp", ...extraArgs],
    cwd: subject.cwd,
    onStdout: subject.log.onStdout,
  });
  subject.rounds = [];
}

const load = join(root, "bench/mini-load.mjs");
const drive = (subject, n, label) =>
  h.runLoad(load, label, [
    "--adapter",
    "ours",
    "--url",
    subject.server.url,
    "--n",
    String(n),
    "--c",
    String(C),
    "--warmup",
    "0",
  ]);

for (const subject of subjects) await drive(subject, WARMUP, `${subject.name} warm-up`);
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < subjects.length; i++) {
    const subject = subjects[(i + round) % subjects.length];
    const pid = subject.server.child.pid;
    const cpu0 = threadCpuMs(pid);
    const gc0 = subject.log.entries.length;
    const result = await drive(subject, N, `${subject.name} round ${round + 1}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const cpu1 = threadCpuMs(pid);
    const runs = result?.ok ?? N;
    const gcs = subject.log.entries.slice(gc0);
    const scavenges = gcs.filter((g) => g.kind === "s");
    const sum = (xs, key) => xs.reduce((total, x) => total + x[key], 0);
    const perRun = (kind) => ((cpu1[kind] ?? 0) - (cpu0[kind] ?? 0)) / runs;
    subject.rounds.push({
      main: perRun("main"),
      v8: perRun("v8"),
      libuv: perRun("libuv"),
      other: perRun("other"),
      scavengesPerK: (scavenges.length / runs) * 1000,
      fullPerK: (gcs.filter((g) => g.kind === "mc" || g.kind === "ms").length / runs) * 1000,
      survivedMb: scavenges.length ? sum(scavenges, "survived") / scavenges.length / 1e6 : Number.NaN,
      promotedMb: scavenges.length ? sum(scavenges, "promoted") / scavenges.length / 1e6 : Number.NaN,
      promotedKbPerRun: sum(scavenges, "promoted") / runs / 1e3,
      allocatedKbPerRun: sum(gcs, "allocated") / runs / 1e3,
      pauseMsPerRun: sum(gcs, "pause") / runs,
      errors: result?.errors ?? Number.NaN,
    });
  }
}

console.log("");
console.log(
  "subject  CPU ms/run: main  V8 helpers  libuv  other | per 1,000 runs: scavenges  full | a scavenge: alive MB  promoted MB | allocated KB/run  promoted KB/run  GC pause ms/run  errors",
);
const med = (subject, key) => median(subject.rounds.map((r) => r[key]));
for (const subject of subjects) {
  console.log(
    `${subject.name.padEnd(8)} ${fmt(med(subject, "main"), 2).padStart(14)} ${fmt(med(subject, "v8"), 2).padStart(11)} ${fmt(med(subject, "libuv"), 2).padStart(6)} ${fmt(med(subject, "other"), 2).padStart(6)} | ${fmt(med(subject, "scavengesPerK"), 1).padStart(26)} ${fmt(med(subject, "fullPerK"), 1).padStart(5)} | ${fmt(med(subject, "survivedMb"), 2).padStart(20)} ${fmt(med(subject, "promotedMb"), 2).padStart(12)} | ${fmt(med(subject, "allocatedKbPerRun"), 0).padStart(16)} ${fmt(med(subject, "promotedKbPerRun"), 1).padStart(15)} ${fmt(med(subject, "pauseMsPerRun"), 3).padStart(16)} ${String(med(subject, "errors")).padStart(7)}`,
  );
}
const ours = subjects[0];
const floor = subjects.find((s) => s.name === (TOKENS ? "stored" : "stack"));
const figure = (key, digits) => `${fmt(med(ours, key), digits)} / ${fmt(med(floor, key), digits)}`;
console.log(
  `bench:gc (medians of ${ROUNDS}, C=${C}${TOKENS ? `, ${TOKENS} tokens a run` : ""}): ` +
    `V8 helper threads ${figure("v8", 2)} ms a run (ours / ${floor.name}), ` +
    `allocated ${figure("allocatedKbPerRun", 0)} KB a run, promoted ${figure("promotedKbPerRun", 1)} KB a run, GC pauses ${figure("pauseMsPerRun", 3)} ms a run, ` +
    `full collections ${figure("fullPerK", 1)} per 1,000 runs`,
);
await h.stop();
h.cleanup();
