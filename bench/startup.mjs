#!/usr/bin/env node
// `npm run bench:startup`: what starting the server costs, as an operator's restart pays it
// and the test suite some hundred times: the built server started afresh (a new database and
// workspace each), the CPU of all its threads and the time from the process's start until it
// listens, then the CPU once its first run (one tool call, then text, against the fake
// upstream) has ended; and a start refused for its configuration (PORT=none: exit 2), its CPU
// until it exits. The modules it loaded before listening, by package, from one more start.
// With BENCH_BASE_ROOT (another checkout, built) its server alternates with ours.
// Env: BENCH_ROUNDS (3), BENCH_STARTS (5 per server and round), BENCH_PIN=1 (see harness).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { cpuMsOf, createHarness, envInt, fmt, machineLine, median, nodeCommand, root } from "./harness.mjs";

const rounds = envInt("BENCH_ROUNDS", 3);
const starts = envInt("BENCH_STARTS", 5);
const probe = pathToFileURL(join(root, "bench/startup-probe.mjs")).href;
const h = createHarness("bench-startup");

/** The figures of the probe's line in `text` (see startup-probe.mjs), or null before it is whole. */
function probed(text) {
  const match = text.match(/startup-probe (\{.*\})\n/);
  return match ? JSON.parse(match[1]) : null;
}
const upstream = await h.startUpstream(join(root, "bench/fake-upstream.mjs"), {
  FAKE_TOOL_NAME: "list_files",
  FAKE_TOOL_ARGS: "{}",
});
const servers = { ours: join(root, "dist/src/server.js") };
if (process.env.BENCH_BASE_ROOT) servers.base = join(process.env.BENCH_BASE_ROOT, "dist/src/server.js");

/** One start of `entry`: its probe's figures, then the process's CPU after its first run. */
async function startOnce(label, entry, env = {}) {
  let figures = null;
  let out = "";
  const server = await h.startServer({
    entry,
    label,
    upstreamUrl: upstream.url,
    nodeArgs: ["--import", probe],
    env,
    onStdout: (text) => {
      out += text;
      figures ??= probed(out);
    },
  });
  if (!figures) h.fail(`${label}: the server answered without its probe's line`);
  const json = { "content-type": "application/json" };
  const session = await (await fetch(`${server.url}/sessions`, { method: "POST", headers: json, body: "{}" })).json();
  const { run } = await (
    await fetch(`${server.url}/sessions/${session.id}/runs?wait=true`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ input: "go" }),
    })
  ).json();
  if (run.status !== "finished" || run.stopReason !== "complete")
    h.fail(`${label}: the first run ended ${JSON.stringify(run)}`);
  const afterRun = cpuMsOf(server.child.pid);
  await h.stop([server.child]);
  return { ...figures, afterRun };
}

/** One start of `entry` refused for its configuration: its probe's figures at its exit. */
function refusedOnce(label, entry) {
  // Pinned as the timed starts are (BENCH_PIN=1).
  const ran = spawnSync(...nodeCommand("server", ["--import", probe, entry]), {
    env: { PATH: process.env.PATH ?? "", PORT: "none", LOG_LEVEL: "warn" },
    encoding: "utf8",
  });
  const figures = probed(ran.stdout);
  if (ran.status !== 2 || !figures) h.fail(`${label}: a start with PORT=none exited ${ran.status}: ${ran.stderr}`);
  return figures;
}

console.log(machineLine());
const results = Object.fromEntries(Object.keys(servers).map((label) => [label, []]));
const refused = Object.fromEntries(Object.keys(servers).map((label) => [label, []]));
for (let round = 1; round <= rounds; round++) {
  for (const [label, entry] of Object.entries(servers)) {
    for (let i = 0; i < starts; i++) results[label].push(await startOnce(label, entry));
    for (let i = 0; i < starts; i++) refused[label].push(refusedOnce(label, entry));
  }
  const line = Object.entries(results)
    .map(([label, xs]) => `${label} ${fmt(median(xs.slice(-starts).map((x) => x.cpu)), 0)} ms CPU to listen`)
    .join(", ");
  console.log(`round ${round}: ${line}`);
}
for (const [label, entry] of Object.entries(servers)) {
  const census = await startOnce(label, entry, { STARTUP_PROBE_MODULES: "1" });
  const total = Object.values(census.modules).reduce((a, b) => a + b, 0);
  const top = Object.entries(census.modules)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([pkg, n]) => `${pkg} ${n}`)
    .join(", ");
  console.log(`${label}: ${total} modules loaded before listening (${top}, ...)`);
}
const summary = Object.entries(results).map(([label, xs]) => {
  const cpu = median(xs.map((x) => x.cpu));
  const wall = median(xs.map((x) => x.wall));
  const afterRun = median(xs.map((x) => x.afterRun));
  const refusedCpu = median(refused[label].map((x) => x.cpu));
  return `${label}: ${fmt(cpu, 0)} ms CPU and ${fmt(wall, 0)} ms to listen, ${fmt(afterRun, 0)} ms CPU after the first run, ${fmt(refusedCpu, 0)} ms CPU to refuse a bad PORT`;
});
console.log(`startup summary (medians of ${rounds * starts} starts each): ${summary.join("; ")}`);
await h.stop();
