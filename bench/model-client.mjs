#!/usr/bin/env node
// `npm run bench:model-client` (builds first): the CPU the model client alone spends on one
// streamed model request (the openai SDK, our fetch over undici, the stream's parsing),
// against the fake upstream on loopback, in a child process per measurement; with
// BENCH_BASE_ROOT (another built checkout) its client too, the two measured in turn, so a
// change on the model path is seen apart from the rest of a run, whose noise on a shared
// machine (±30 % a round) hides a few per cent. A benchmark, not a test: prints figures.
//
// Env: BENCH_REQUESTS (6000 a measurement, after 1500 to warm up), BENCH_C (4 at once),
//   BENCH_ROUNDS (3), BENCH_BASE_ROOT.
import { spawnSync } from "node:child_process";
import { join, resolve } from "node:path";
import { createHarness, envInt, fmt, machineLine, median, root } from "./harness.mjs";

const REQUESTS = envInt("BENCH_REQUESTS", 6000);
const C = Math.max(1, envInt("BENCH_C", 4));
const ROUNDS = Math.max(1, envInt("BENCH_ROUNDS", 3));
const base = process.env.BENCH_BASE_ROOT ? resolve(process.env.BENCH_BASE_ROOT) : null;

/** One measurement, in a fresh process: prints `{cpuUsPerRequest, perSecond}` as JSON. */
const MEASURE = `
const [clientModule, baseURL, requests, c] = process.argv.slice(1);
const { createOpenAIModelClient } = await import(clientModule);
const client = createOpenAIModelClient({ baseURL, apiKey: "k", model: "fake-model", maxRetries: 2 });
const run = new AbortController();
const ask = () => client.complete({ messages: [{ role: "user", content: "hi" }], tools: [], signal: run.signal, onTextDelta() {} });
const batch = async (n) => { for (let i = 0; i < n; i += Number(c)) await Promise.all(Array.from({ length: Number(c) }, ask)); };
const first = await ask();
if (!first.ok) { console.error(JSON.stringify(first)); process.exit(1); }
await batch(1500);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await batch(Number(requests));
const cpu = process.cpuUsage(cpu0);
const ms = performance.now() - t0;
console.log(JSON.stringify({ cpuUsPerRequest: (cpu.user + cpu.system) / Number(requests), perSecond: Number(requests) / ms * 1000 }));
process.exit(0);
`;

const h = createHarness("bench-model-client");
console.log("bench:model-client: one streamed model request's CPU in the model client alone, fake upstream, loopback");
console.log(`  ${machineLine()}`);
const upstream = await h.startUpstream(join(root, "bench/fake-upstream.mjs"));
const clients = { ours: root, ...(base ? { base } : {}) };
const results = Object.fromEntries(Object.keys(clients).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const names = Object.keys(clients);
  if (round % 2 === 1) names.reverse();
  for (const name of names) {
    const clientModule = join(clients[name], "dist/src/model/openai-client.js");
    const measured = spawnSync(
      process.execPath,
      ["--input-type=module", "-e", MEASURE, clientModule, upstream.url, String(REQUESTS), String(C)],
      { encoding: "utf8" },
    );
    if (measured.status !== 0) h.fail(`${name}: the measurement failed: ${measured.stderr || measured.stdout}`);
    const result = JSON.parse(measured.stdout.trim().split("\n").at(-1));
    results[name].push(result);
    console.log(
      `  round ${round + 1} ${name.padEnd(4)} ${fmt(result.cpuUsPerRequest)} us CPU a request, ${fmt(result.perSecond, 0)} requests/s`,
    );
  }
}
h.cleanup();
const line = Object.entries(results)
  .map(([name, rs]) => `${name} ${fmt(median(rs.map((r) => r.cpuUsPerRequest)))} us CPU a request`)
  .join("; ");
console.log(`summary (medians of ${ROUNDS}, ${REQUESTS} requests, ${C} at once): ${line}`);
