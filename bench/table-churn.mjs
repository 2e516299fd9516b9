#!/usr/bin/env node
// What a long-lived table whose entries come and go costs the garbage collector: a registry
// of "runs" (each holding ~10 KB of young objects), 25 to 45 of them live at a time, each
// added under a new id and deleted when it ends, as the server's registries of live runs,
// watchers and streams are. Kept in a Map, in a Set, or in src/string-table.ts's StringTable,
// each in a child process (test/fixtures/gc/table-churn.mjs) started with --trace-gc-nvp,
// BENCH_REPEAT times in turn; printed:
// young collections, the bytes they promoted to the old generation and kept alive in the young
// one, per run, and the CPU, medians (and the largest promotion seen). A run's objects are
// garbage once it ends: whatever a young collection keeps of them is kept by the table's
// leftovers (see string-table.ts). The table is made old first (two full collections), as a
// server's tables are by the time load comes: a young table only starts such a chain once a
// young collection happens to promote it, which some runs never do.
//
//   npm run build && node bench/table-churn.mjs      (BENCH_N runs, default 200000; BENCH_REPEAT, default 3)
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { envInt, fmt, machineLine, median } from "./harness.mjs";

const N = envInt("BENCH_N", 200_000);
const REPEAT = envInt("BENCH_REPEAT", 3);
const kinds = ["map", "set", "string-table"];

const child = fileURLToPath(new URL("../test/fixtures/gc/table-churn.mjs", import.meta.url));

console.log(`bench:table-churn: ${N} runs through a long-lived table, 25-45 live at a time`);
console.log(`  ${machineLine()}`);
console.log("  table         scavenges  promoted KB/run (largest)  kept young KB/run  CPU ms");
const measured = Object.fromEntries(kinds.map((kind) => [kind, []]));
for (let round = 0; round < REPEAT; round++) {
  for (const kind of kinds) {
    const out = spawnSync(process.execPath, ["--trace-gc-nvp", "--expose-gc", child, kind, String(N)], {
      encoding: "utf8",
      maxBuffer: 256 * 1024 * 1024,
    });
    if (out.status !== 0) throw new Error(`${kind}: exit ${out.status}\n${out.stderr}`);
    const scavenges = out.stdout.split("\n").filter((line) => line.includes(" gc=s "));
    const sum = (field) =>
      scavenges.reduce((total, line) => total + Number(line.match(new RegExp(` ${field}=(\\d+)`))?.[1] ?? 0), 0);
    measured[kind].push({
      scavenges: scavenges.length,
      promoted: sum("promoted") / N / 1024,
      kept: sum("new_space_survived") / N / 1024,
      cpu: Number(out.stdout.match(/cpu_ms=([\d.]+)/)?.[1]),
    });
  }
}
const results = {};
for (const kind of kinds) {
  const rounds = measured[kind];
  const of = (field) => median(rounds.map((r) => r[field]));
  const r = { scavenges: of("scavenges"), promoted: of("promoted"), kept: of("kept"), cpu: of("cpu") };
  r.largest = Math.max(...rounds.map((round) => round.promoted));
  results[kind] = r;
  console.log(
    `  ${kind.padEnd(13)} ${fmt(r.scavenges, 0).padStart(9)}  ${`${fmt(r.promoted, 2)} (${fmt(r.largest, 2)})`.padStart(25)}  ${fmt(r.kept, 2).padStart(17)}  ${fmt(r.cpu, 0).padStart(6)}`,
  );
}
const map = results.map;
const table = results["string-table"];
console.log(
  `bench:table-churn (medians of ${REPEAT}): promoted ${fmt(map.promoted, 2)} KB a run with a Map (largest ${fmt(map.largest, 2)}), ${fmt(table.promoted, 2)} with a StringTable (largest ${fmt(table.largest, 2)}); CPU ${fmt(map.cpu, 0)} / ${fmt(table.cpu, 0)} ms`,
);
