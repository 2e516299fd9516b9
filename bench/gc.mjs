#!/usr/bin/env node
// What garbage collection costs a run: the zero-latency workload of bench:http (a session and a
// streamed run with one list_files call, C concurrent runs), against our server, the stack
// fixture (bench/stack-floor-server.mjs) and, with BENCH_BASE_ROOT, another built checkout,
// each started with --trace-gc-nvp, in rotation. For each: server CPU per run by thread kind
// (/proc/<pid>/task: the main thread, V8's helper threads, libuv's pool, workers), and from
// V8's own lines over the measured runs: scavenges and full collections per 1,000 runs, the
// bytes alive at a scavenge and those it promoted to the old generation, per scavenge and per
// run, and the main thread's pauses per run. Bytes promoted per run that stay the same
// whatever the young generation's size (BENCH_NODE_ARGS=--max-semi-space-size=8) are objects
// kept alive until a full collection.
//
//   npm run bench:gc        (BENCH_N runs, default 3000, after BENCH_WARMUP, default 1000, at
//                            BENCH_C, default 25; BENCH_ROUNDS rotations, default 3;
//                            BENCH_NODE_ARGS: more node flags for every server)
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createHarness, envInt, fmt, machineLine, median, root } from "./harness.mjs";

const N = envInt("BENCH_N", 3000);
const WARMUP = envInt("BENCH_WARMUP", 1000);
const C = envInt("BENCH_C", 25);
const ROUNDS = envInt("BENCH_ROUNDS", 3);
const extraArgs = (process.env.BENCH_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);

const h = createHarness("bench-gc");
console.log(`bench:gc: ${N} runs at C=${C} (after ${WARMUP}), ${ROUNDS} rounds in rotation`);
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

/** The GC lines a server printed (--trace-gc-nvp), parsed: kind, pause, survived, promoted. */
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
        survived: field("new_space_survived"),
        promoted: field("promoted"),
      });
    }
  };
  return { entries, onStdout };
}

const upstream = await h.startUpstream(join(root, "bench/fake-upstream.mjs"), {
  FAKE_TOOL_NAME: "list_files",
  FAKE_TOOL_ARGS: "{}",
});
const subjects = [
  { name: "ours", entry: join(root, "dist/src/server.js"), cwd: root },
  { name: "stack", entry: join(root, "bench/stack-floor-server.mjs"), cwd: root },
];
if (process.env.BENCH_BASE_ROOT) {
  const base = process.env.BENCH_BASE_ROOT;
  subjects.splice(1, 0, { name: "base", entry: join(base, "dist/src/server.js"), cwd: base });
}
for (const subject of subjects) {
  subject.log = gcLog();
  subject.server = await h.startServer({
    entry: subject.entry,
    label: subject.name,
    upstreamUrl: upstream.url,
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
      pauseMsPerRun: sum(gcs, "pause") / runs,
      errors: result?.errors ?? Number.NaN,
    });
  }
}

console.log("");
console.log(
  "subject  CPU ms/run: main  V8 helpers  libuv  other | per 1,000 runs: scavenges  full | a scavenge: alive MB  promoted MB | promoted KB/run  GC pause ms/run  errors",
);
const med = (subject, key) => median(subject.rounds.map((r) => r[key]));
for (const subject of subjects) {
  console.log(
    `${subject.name.padEnd(8)} ${fmt(med(subject, "main"), 2).padStart(14)} ${fmt(med(subject, "v8"), 2).padStart(11)} ${fmt(med(subject, "libuv"), 2).padStart(6)} ${fmt(med(subject, "other"), 2).padStart(6)} | ${fmt(med(subject, "scavengesPerK"), 1).padStart(26)} ${fmt(med(subject, "fullPerK"), 1).padStart(5)} | ${fmt(med(subject, "survivedMb"), 2).padStart(20)} ${fmt(med(subject, "promotedMb"), 2).padStart(12)} | ${fmt(med(subject, "promotedKbPerRun"), 1).padStart(15)} ${fmt(med(subject, "pauseMsPerRun"), 3).padStart(16)} ${String(med(subject, "errors")).padStart(7)}`,
  );
}
const ours = subjects[0];
const stack = subjects.find((s) => s.name === "stack");
console.log(
  `bench:gc (medians of ${ROUNDS}, C=${C}): V8 helper threads ${fmt(med(ours, "v8"), 2)} / ${fmt(med(stack, "v8"), 2)} ms a run (ours / stack), ` +
    `promoted ${fmt(med(ours, "promotedKbPerRun"), 1)} / ${fmt(med(stack, "promotedKbPerRun"), 1)} KB a run, ` +
    `GC pauses ${fmt(med(ours, "pauseMsPerRun"), 3)} / ${fmt(med(stack, "pauseMsPerRun"), 3)} ms a run`,
);
await h.stop();
h.cleanup();
