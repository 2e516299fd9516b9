#!/usr/bin/env node
// `npm run bench:workspace` (builds first): the CPU (all threads) that creating one session's
// workspace costs, alone (`createSessionWorkspace`, as every new session calls it), in a child
// process per measurement, on a fresh root in the system's temporary directory; with
// BENCH_BASE_ROOT (another built checkout) its function too, the two measured in turn. A
// change of a few tens of microseconds a session is lost in a whole run's noise on a shared
// machine; here it shows. A benchmark, not a test: prints figures.
//
// Env: BENCH_SESSIONS (5000 a measurement, after 500 to warm up), BENCH_ROUNDS (3), BENCH_BASE_ROOT.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { envInt, fmt, machineLine, median, root } from "./harness.mjs";

const SESSIONS = envInt("BENCH_SESSIONS", 5000);
const ROUNDS = Math.max(1, envInt("BENCH_ROUNDS", 3));
const base = process.env.BENCH_BASE_ROOT ? resolve(process.env.BENCH_BASE_ROOT) : null;

/** One measurement, in a fresh process: prints `{cpuUsPerSession}` as JSON. */
const MEASURE = `
const [workspaceModule, workspaceRoot, sessions] = process.argv.slice(1);
const { createSessionWorkspace } = await import(workspaceModule);
let next = 0;
const create = async (n) => {
  for (let i = 0; i < n; i++) await createSessionWorkspace({ root: workspaceRoot, sessionId: "s" + next++ });
};
await create(500);
const cpu0 = process.cpuUsage();
await create(Number(sessions));
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ cpuUsPerSession: (cpu.user + cpu.system) / Number(sessions) }));
`;

console.log("bench:workspace: the CPU of creating one session's workspace, alone");
console.log(`  ${machineLine()}`);
const builds = { ours: root, ...(base ? { base } : {}) };
const results = Object.fromEntries(Object.keys(builds).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const names = Object.keys(builds);
  if (round % 2 === 1) names.reverse();
  for (const name of names) {
    const workspaceRoot = mkdtempSync(join(tmpdir(), "bench-workspace-"));
    try {
      const module = join(builds[name], "dist/src/tools/session-workspace.js");
      const measured = spawnSync(
        process.execPath,
        ["--input-type=module", "-e", MEASURE, module, workspaceRoot, String(SESSIONS)],
        { encoding: "utf8" },
      );
      if (measured.status !== 0) {
        console.error(`${name}: the measurement failed: ${measured.stderr || measured.stdout}`);
        process.exit(1);
      }
      const result = JSON.parse(measured.stdout.trim().split("\n").at(-1));
      results[name].push(result);
      console.log(`  round ${round + 1} ${name.padEnd(4)} ${fmt(result.cpuUsPerSession)} us CPU a session`);
    } finally {
      rmSync(workspaceRoot, { recursive: true, force: true });
    }
  }
}
const line = Object.entries(results)
  .map(([name, rs]) => `${name} ${fmt(median(rs.map((r) => r.cpuUsPerSession)))} us CPU a session`)
  .join("; ");
console.log(`summary (medians of ${ROUNDS}, ${SESSIONS} sessions each): ${line}`);
