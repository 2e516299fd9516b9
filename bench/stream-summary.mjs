// The summary of bench:stream: a table of the fixtures and our server, one of the subjects
// over PostgreSQL beside the floor (when measured), and the last line.
import { fmt, machineLoad } from "./harness.mjs";

/**
 * Prints the summary of `table` (a row per C: { c, load, [subject]: { p50, p99, cpuMsPerRun,
 * pgCpuMsPerRun, errors } }) for `subjects`, pgN being those `pgInstances` counts instances of.
 */
export function printSummary({ table, subjects, pgInstances, p99Ms }) {
  /** The largest C where `s` had token p99 <= p99Ms and no error, and the first C where not. */
  const largest = (s) => {
    const best = table.filter((r) => r[s].p99 <= p99Ms && r[s].errors === 0).at(-1);
    const over = table.find((r) => !(r[s].p99 <= p99Ms) || r[s].errors > 0);
    return (
      `${best ? best.c : "none"}` +
      `${over ? ` (C=${over.c}: p99 ${fmt(over[s].p99)} ms, ${over[s].errors} errors)` : " (the largest measured)"}`
    );
  };
  console.log("summary (token latency = upstream send -> client receive; medians over the repetitions):");
  console.log(
    `  ${"C".padStart(6)}${[
      "floor p50",
      "p99",
      "stack p50",
      "p99",
      "ours p50",
      "p99",
      "stored p99",
      "stack CPU/run",
      "stored CPU/run",
      "ours CPU/run",
      "ours/stack",
      "ours/stored",
      "errors s/o",
    ]
      .map((x) => x.padStart(15))
      .join("")}`,
  );
  for (const r of table) {
    console.log(
      `  ${String(r.c).padStart(6)}${[
        fmt(r.floor.p50),
        fmt(r.floor.p99),
        fmt(r.stack.p50),
        fmt(r.stack.p99),
        fmt(r.ours.p50),
        fmt(r.ours.p99),
        fmt(r.stored.p99),
        fmt(r.stack.cpuMsPerRun),
        fmt(r.stored.cpuMsPerRun),
        fmt(r.ours.cpuMsPerRun),
        fmt(r.ours.cpuMsPerRun / r.stack.cpuMsPerRun, 2),
        fmt(r.ours.cpuMsPerRun / r.stored.cpuMsPerRun, 2),
        `${r.stack.errors ?? "-"}/${r.ours.errors ?? "-"}`,
      ]
        .map((x) => x.padStart(15))
        .join("")}`,
    );
  }
  /** A subject beside the stack fixture and ours, a line per C. */
  const beside = (subject, title) => {
    if (!subjects.includes(subject)) return;
    console.log(`  ${subject} (${title}), measured in the same alternation:`);
    for (const r of table) {
      const m = r[subject];
      console.log(
        `  ${String(r.c).padStart(6)}  ${subject} p50 ${fmt(m.p50)} p99 ${fmt(m.p99)} ms, CPU/run ${fmt(m.cpuMsPerRun)} ms ` +
          `(${fmt(m.cpuMsPerRun / r.stack.cpuMsPerRun, 2)}x the stack; ours/${subject} ${fmt(r.ours.cpuMsPerRun / m.cpuMsPerRun, 2)}), errors ${m.errors}`,
      );
    }
  };
  beside("sdk", "the stack fixture on the SDK's chunk iterator");
  beside("base", "BENCH_BASE_ROOT");
  for (const s of subjects.filter(pgInstances)) {
    console.log(
      `  ${s}: ${pgInstances(s)} instance(s) of our server over one PostgreSQL, the runs alternating between them (CPU summed over the instances), beside the floor:`,
    );
    console.log(
      `  ${"C".padStart(6)}${["floor p99", "p50", "p99", "errors", "server CPU/run", "PG CPU/run", "load 1m"].map((x) => x.padStart(15)).join("")}`,
    );
    for (const r of table) {
      console.log(
        `  ${String(r.c).padStart(6)}${[
          fmt(r.floor.p99),
          fmt(r[s].p50),
          fmt(r[s].p99),
          String(r[s].errors),
          fmt(r[s].cpuMsPerRun),
          fmt(r[s].pgCpuMsPerRun),
          r.load,
        ]
          .map((x) => x.padStart(15))
          .join("")}`,
      );
    }
  }
  const first = table[0];
  const pgParts = subjects.filter(pgInstances).map((s) => `${s}: ${largest(s)}`);
  if (!subjects.includes("ours")) {
    console.log(
      `bench:stream: largest C with token p99 <= ${p99Ms} ms and no error: ${pgParts.join("; ") || "-"}; load average ${machineLoad()}`,
    );
    return;
  }
  console.log(
    `bench:stream: largest C with our token p99 <= ${p99Ms} ms: ${largest("ours")}; ` +
      `at C=${first.c} p99 ours ${fmt(first.ours.p99)} / stack ${fmt(first.stack.p99)} / floor ${fmt(first.floor.p99)} ms, ` +
      `CPU per run ours ${fmt(first.ours.cpuMsPerRun)} / stack ${fmt(first.stack.cpuMsPerRun)} ms (${fmt(first.ours.cpuMsPerRun / first.stack.cpuMsPerRun, 2)}x)` +
      ` / stack storing deltas ${fmt(first.stored.cpuMsPerRun)} ms (${fmt(first.ours.cpuMsPerRun / first.stored.cpuMsPerRun, 2)}x)` +
      `${first.base ? `, base ${fmt(first.base.cpuMsPerRun)} ms (p99 ${fmt(first.base.p99)})` : ""}` +
      pgParts.map((part) => `; ${part}`).join("") +
      `; load average ${machineLoad()}`,
  );
}
