// The alternation of bench/http.mjs (BENCH_ALTERNATE=<rounds>): our server, the stack-floor
// fixture (bench/stack-floor-server.mjs) and, with BENCH_BASE_ROOT (another built checkout),
// that checkout's server, all started at once against the same fake upstream and measured
// at C concurrent runs in turn, the order rotating each round, so that a shared machine's
// noise falls on all of them alike. Prints each round, the medians, and a final summary
// line with our runs/s and CPU per run as ratios of the fixture's.
import { join } from "node:path";
import { fmt, machineLoad, median, root } from "./harness.mjs";

/**
 * Runs `rounds` rounds of `load(label, pid, url)` (resolving with the driver's JSON) over the
 * servers started by `h`; returns whether every measurement ran without a failed run.
 */
export async function alternate({ h, rounds, c, upstreamUrl, env, nodeArgs, load }) {
  const servers = await h.startOurs({ upstreamUrl, env, nodeArgs });
  servers.stack = await h.startServer({
    entry: join(root, "bench/stack-floor-server.mjs"),
    label: "stack",
    upstreamUrl,
    env,
    nodeArgs,
  });
  const names = Object.keys(servers);
  for (const name of names) console.log(`  ${name}: pid ${servers[name].child.pid} at ${servers[name].url}`);
  console.log(`  ${rounds} rounds at C=${c}, the order rotating each round\n`);

  const results = Object.fromEntries(names.map((name) => [name, []]));
  const loads = [];
  let failed = false;
  for (let round = 0; round < rounds; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    loads.push(machineLoad());
    for (const name of order) {
      const r = await load(`${name} C=${c} round ${round + 1}`, servers[name]);
      if (!r || r.errors > 0) failed = true;
      // From the total (the driver rounds its own per-run figure to 0.1 ms).
      const cpuMsPerRun = r?.server?.cpuMs != null && r.ok > 0 ? r.server.cpuMs / r.ok : r?.server?.cpuMsPerRun;
      results[name].push({ runsPerS: r?.runsPerS, cpuMsPerRun });
    }
  }
  loads.push(machineLoad());

  console.log("");
  console.log(`alternation at C=${c} (runs/s | server CPU ms per run, all threads, from /proc):`);
  for (const name of names) {
    const rows = results[name].map((r) => `${fmt(r.runsPerS)} | ${fmt(r.cpuMsPerRun, 2)}`).join("   ");
    console.log(`  ${name.padEnd(6)} ${rows}`);
  }
  console.log(`  load average (1, 5, 15 min) before each round and at the end: ${loads.join("; ")}`);
  const med = (name, key) => median(results[name].map((r) => r[key]));
  const ratio = (name, key) => med(name, key) / med("stack", key);
  const part = (name) => `${name} ${fmt(med(name, "runsPerS"))} runs/s, ${fmt(med(name, "cpuMsPerRun"), 2)} ms CPU/run`;
  // Each round's own ratio, measured minutes apart at most: less moved by the machine's drift than a ratio of medians.
  const roundsLine = (other, key) => {
    const ratios = results.ours.map((r, i) => r[key] / results[other][i][key]);
    return `median ${fmt(median(ratios), 2)}x (${fmt(Math.min(...ratios), 2)}-${fmt(Math.max(...ratios), 2)})`;
  };
  for (const other of names.filter((n) => n !== "ours")) {
    const line = `runs/s ${roundsLine(other, "runsPerS")}, CPU/run ${roundsLine(other, "cpuMsPerRun")}`;
    console.log(`  ours/${other}, each round's own ratio: ${line}`);
  }
  const vs = (name) =>
    `${name}/stack: ${fmt(ratio(name, "runsPerS"), 2)}x runs/s, ${fmt(ratio(name, "cpuMsPerRun"), 2)}x CPU/run`;
  console.log(
    `summary (medians of ${rounds}, C=${c}): ${names.map(part).join("; ")}; ` +
      `${names
        .filter((n) => n !== "stack")
        .map(vs)
        .join("; ")} (target: ours >= 0.9x runs/s, <= 1.15x CPU/run)`,
  );
  return !failed;
}
