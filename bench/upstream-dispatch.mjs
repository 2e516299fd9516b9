#!/usr/bin/env node
// What a model request's plumbing costs: streamed requests to the fake upstream (zero latency),
// BENCH_C at a time, read to their end, made either with undici's `request()` (as
// src/model/upstream-fetch.ts did until sitting 29) or with dispatchRequest
// (src/model/upstream-dispatch.ts: undici's dispatcher with a plain handler feeding a Readable),
// each in a child process started with --trace-gc-nvp, BENCH_REPEAT times in turn. Printed, per
// request after a warm-up: the bytes young collections promoted and the child's CPU (medians).
// Nothing else runs in the child: what is promoted is kept alive by the request's own objects.
//
//   npm run build && node bench/upstream-dispatch.mjs   (BENCH_N requests, default 20000;
//                                                        BENCH_C, default 25; BENCH_REPEAT, default 3)
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { Agent, request } from "undici";
import { createHarness, envInt, fmt, machineLine, median, root } from "./harness.mjs";

const N = envInt("BENCH_N", 20_000);
const C = envInt("BENCH_C", 25);
const REPEAT = envInt("BENCH_REPEAT", 3);
const WARMUP = 2000;

async function child(mode, url) {
  const { dispatchRequest } = await import("../dist/src/model/upstream-dispatch.js");
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  const body = JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] });
  const headers = { "content-type": "application/json" };
  const send =
    mode === "request"
      ? () => request(url, { method: "POST", headers, body, dispatcher })
      : () => dispatchRequest({ dispatcher, url, method: "POST", headers, body, signal: undefined });
  const once = async () => {
    let bytes = 0;
    for await (const chunk of (await send()).body) bytes += chunk.length;
    return bytes;
  };
  for (let i = 0; i < WARMUP; i++) await once();
  console.log("MEASURED");
  const start = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: C }, async () => {
      while (next++ < N) await once();
    }),
  );
  const used = process.cpuUsage(start);
  console.log(`cpu_us=${(used.user + used.system) / N}`);
  await dispatcher.close();
}

if (process.argv[2] === "--child") {
  await child(process.argv[3], process.argv[4]);
} else {
  const h = createHarness("bench-upstream-dispatch");
  console.log(`bench:upstream-dispatch: ${N} streamed requests at C=${C} (after ${WARMUP}), ${REPEAT} rounds`);
  console.log(`  ${machineLine()}`);
  const upstream = await h.startUpstream(join(root, "bench/fake-upstream.mjs"), {
    FAKE_TOOL_NAME: "list_files",
    FAKE_TOOL_ARGS: "{}",
  });
  const url = `${upstream.url}/chat/completions`;
  const measured = { request: [], dispatch: [] };
  for (let round = 0; round < REPEAT; round++) {
    for (const mode of ["request", "dispatch"]) {
      const out = spawnSync(
        process.execPath,
        ["--trace-gc-nvp", new URL(import.meta.url).pathname, "--child", mode, url],
        {
          encoding: "utf8",
          maxBuffer: 256 * 1024 * 1024,
        },
      );
      if (out.status !== 0) throw new Error(`${mode}: exit ${out.status}\n${out.stderr}`);
      const after = out.stdout.slice(out.stdout.indexOf("MEASURED"));
      let promoted = 0;
      for (const line of after.split("\n"))
        if (line.includes(" gc=s ")) promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
      measured[mode].push({ promoted: promoted / N, cpu: Number(/cpu_us=([\d.]+)/.exec(after)?.[1]) });
    }
  }
  const of = (mode, key) => median(measured[mode].map((r) => r[key]));
  for (const mode of ["request", "dispatch"]) {
    console.log(
      `  ${mode.padEnd(9)} promoted ${fmt(of(mode, "promoted"), 0).padStart(6)} B a request, CPU ${fmt(of(mode, "cpu"), 1).padStart(6)} µs a request`,
    );
  }
  console.log(
    `bench:upstream-dispatch (medians of ${REPEAT}): promoted ${fmt(of("request", "promoted"), 0)} / ${fmt(of("dispatch", "promoted"), 0)} B a request (request() / dispatchRequest), CPU ${fmt(of("request", "cpu"), 1)} / ${fmt(of("dispatch", "cpu"), 1)} µs a request`,
  );
  await h.stop();
  h.cleanup();
}
