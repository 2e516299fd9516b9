#!/usr/bin/env node
// The fallback load driver of `npm run bench:http`, used only when the shared kit's
// load.mjs (../shared/bench/load.mjs, the agreed measuring tool) is not present.
// Same command line (the subset bench/http.mjs uses), same figures, same --json fields.
//
//   node bench/mini-load.mjs --adapter ours|floor --url URL [--n 200] [--c 1] [--warmup 5]
//                            [--pid N] [--input hi] [--label L] [--json PATH] [--tokens 1]
//
// --url may list several servers (comma-separated, e.g. instances over one database): the
// runs alternate between them, each run (its session and its run) on one. --pid may list
// several processes: their CPU and RSS are summed.
//
// ours:  POST /sessions, then POST /sessions/{id}/runs (Accept: text/event-stream) read to
//        its end; ok when the last frame is `run.finished` with stopReason "complete" and
//        the ids ran 1, 2, 3 ... without a gap.
// floor: the two model requests of a run made directly against the fake upstream.
// --tokens 1: the upstream streams stamped tokens (FAKE_TEXT_TOKENS, see bench/token-stamps.mjs):
//        each token's latency (upstream send -> received here) is measured, and the text
//        answer may be anything.
import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { cpuMsOf } from "./harness.mjs";
import { percentile, stampLatencies, wallMs } from "./token-stamps.mjs";

const opts = {};
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  if (!arg.startsWith("--")) {
    console.error(`unexpected argument ${arg}`);
    process.exit(2);
  }
  const eq = arg.indexOf("=");
  if (eq > 0) opts[arg.slice(2, eq)] = arg.slice(eq + 1);
  else opts[arg.slice(2)] = process.argv[++i];
}
const adapterName = opts.adapter ?? "ours";
const baseUrls = (opts.url ?? "")
  .split(",")
  .filter(Boolean)
  .map((url) => url.replace(/\/+$/, ""));
const total = Number(opts.n ?? 200);
const concurrency = Number(opts.c ?? 1);
const warmup = Number(opts.warmup ?? 5);
const pids = opts.pid ? opts.pid.split(",").map(Number) : [];
const input = opts.input ?? "hi";
const tokens = opts.tokens === "1";
/** Token latencies (ms) of the measured runs; warm-up runs leave theirs out. */
let tokenMs = [];
if (baseUrls.length === 0 || !(total > 0) || !(concurrency > 0) || !["ours", "floor"].includes(adapterName)) {
  console.error("usage: node bench/mini-load.mjs --adapter ours|floor --url URL [--n N] [--c C] [--pid PID]");
  process.exit(2);
}
for (const url of baseUrls) {
  const target = new URL(url);
  if (!/^(127\.|localhost$|\[::1\]$)/.test(target.hostname)) {
    console.error(`refusing a non-loopback target: ${target.hostname}`);
    process.exit(2);
  }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency * 2 + 4 });

function send(baseUrl, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      `${baseUrl}${path}`,
      {
        method,
        agent,
        headers: data ? { "content-type": "application/json", "content-length": data.length, ...headers } : headers,
      },
      resolve,
    );
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on("error", reject);
    req.end(data);
  });
}

async function bodyText(res) {
  let text = "";
  res.setEncoding("utf8");
  for await (const part of res) text += part;
  return text;
}

/** Reads an SSE response to its end; calls onFrame({id, event, data}) per frame. */
async function readFrames(res, onFrame) {
  if (res.statusCode !== 200 && res.statusCode !== 201) {
    throw new Error(`stream answered ${res.statusCode}: ${(await bodyText(res)).slice(0, 200)}`);
  }
  let pending = "";
  let lastAt;
  res.setEncoding("utf8");
  const flush = (block) => {
    const frame = { event: "message", data: [] };
    for (const line of block.split(/\r?\n/)) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") frame.data.push(value);
      else if (field === "event") frame.event = value;
      else if (field === "id") frame.id = value;
    }
    if (frame.data.length === 0) return;
    lastAt = performance.now();
    onFrame({ ...frame, data: frame.data.join("\n") });
  };
  for await (const part of res) {
    pending += part;
    for (let end = pending.search(/\r?\n\r?\n/); end >= 0; end = pending.search(/\r?\n\r?\n/)) {
      flush(pending.slice(0, end));
      pending = pending.slice(end).replace(/^\r?\n\r?\n/, "");
    }
  }
  if (pending.trim()) flush(pending);
  return lastAt;
}

const adapters = {
  ours: {
    async session(baseUrl) {
      const res = await send(baseUrl, "POST", "/sessions", {});
      const text = await bodyText(res);
      if (res.statusCode !== 201) throw new Error(`POST /sessions answered ${res.statusCode}: ${text.slice(0, 200)}`);
      return JSON.parse(text).id;
    },
    async run(baseUrl, sessionId) {
      const res = await send(
        baseUrl,
        "POST",
        `/sessions/${sessionId}/runs`,
        { input },
        { accept: "text/event-stream" },
      );
      let expected = 1;
      let problem = null;
      let finished = null;
      let first;
      const lastAt = await readFrames(res, (frame) => {
        first ??= performance.now();
        if (Number(frame.id) !== expected && !problem) problem = `event id ${frame.id}, expected ${expected}`;
        expected++;
        if (frame.event === "run.finished") finished = JSON.parse(frame.data).run;
        else if (tokens && frame.event === "text.delta") stampLatencies(frame.data, wallMs(), tokenMs);
      });
      if (!problem && !finished) problem = "the stream ended without run.finished";
      if (!problem && finished.stopReason !== "complete") problem = `stopReason ${finished.stopReason}`;
      return { ok: !problem, detail: problem, events: expected - 1, first, lastAt };
    },
  },
  floor: {
    async session() {
      return null;
    },
    async run(baseUrl) {
      const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }];
      let first;
      let lastAt;
      const ask = async (messages) => {
        const res = await send(baseUrl, "POST", "/chat/completions", {
          model: "fake-model",
          stream: true,
          stream_options: { include_usage: true },
          messages,
          tools,
        });
        const out = { text: "", calls: [], finish: null };
        lastAt = await readFrames(res, (frame) => {
          if (frame.data === "[DONE]") return;
          first ??= performance.now();
          const choice = JSON.parse(frame.data).choices?.[0];
          if (!choice) return;
          if (choice.delta?.content) {
            out.text += choice.delta.content;
            if (tokens) stampLatencies(choice.delta.content, wallMs(), tokenMs);
          }
          for (const tc of choice.delta?.tool_calls ?? []) {
            out.calls[tc.index] ??= { id: "", name: "", arguments: "" };
            const call = out.calls[tc.index];
            if (tc.id) call.id = tc.id;
            if (tc.function?.name) call.name += tc.function.name;
            if (tc.function?.arguments) call.arguments += tc.function.arguments;
          }
          if (choice.finish_reason) out.finish = choice.finish_reason;
        });
        return out;
      };
      const messages = [{ role: "user", content: input }];
      const a = await ask(messages);
      if (a.finish !== "tool_calls" || a.calls.length !== 1) return { ok: false, detail: "no tool call first" };
      JSON.parse(a.calls[0].arguments);
      messages.push({
        role: "assistant",
        content: null,
        tool_calls: a.calls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: c.arguments },
        })),
      });
      messages.push({ role: "tool", tool_call_id: a.calls[0].id, content: "value" });
      const b = await ask(messages);
      const ok = b.finish === "stop" && (tokens || b.text === "done");
      return { ok, detail: ok ? undefined : `second answer: ${b.finish} ${b.text}`, events: 2, first, lastAt };
    },
  },
};
const adapter = adapters[adapterName];

async function oneRun(baseUrl) {
  const start = performance.now();
  try {
    const sessionId = await adapter.session(baseUrl);
    const created = performance.now();
    const r = await adapter.run(baseUrl, sessionId);
    const end = performance.now();
    return {
      ...r,
      totalMs: end - start,
      createMs: created - start,
      runMs: end - created,
      ttfeMs: r.first === undefined ? undefined : r.first - created,
      lastEvMs: r.lastAt === undefined ? undefined : r.lastAt - created,
    };
  } catch (err) {
    return { ok: false, detail: String(err?.message ?? err), totalMs: performance.now() - start };
  }
}

async function runMany(n, c, into) {
  let started = 0;
  const worker = async () => {
    while (started < n) {
      const r = await oneRun(baseUrls[started++ % baseUrls.length]);
      into.push(r);
      if (!r.ok && into.filter((x) => !x.ok).length <= 3) console.error(`run failed: ${r.detail}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, c) }, worker));
}

const procRssMbOne = (p, key) => {
  try {
    const m = readFileSync(`/proc/${p}/status`, "utf8").match(new RegExp(`^${key}:\\s+(\\d+)`, "m"));
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : null;
  } catch {
    return null;
  }
};
/** `read` of every --pid, summed; null when any is unreadable. */
const summed = (read) => {
  const xs = pids.map(read);
  return xs.some((x) => x === null) ? null : Math.round(xs.reduce((a, b) => a + b, 0) * 10) / 10;
};
const procCpuMs = () => summed((p) => cpuMsOf(p));
const procRssMb = (key) => summed((p) => procRssMbOne(p, key));
const pid = pids.length ? pids.join(",") : undefined;
const round1 = (x) => Math.round(x * 10) / 10;

if (warmup > 0) await runMany(warmup, Math.min(concurrency, warmup), []);
tokenMs = [];
const cpu0 = pid ? procCpuMs() : null;
const rss0 = pid ? procRssMb("VmRSS") : null;
let peakRss = rss0 ?? 0;
const sampler = pid ? setInterval(() => (peakRss = Math.max(peakRss, procRssMb("VmRSS") ?? 0)), 250) : null;
const results = [];
const t0 = performance.now();
await runMany(total, concurrency, results);
const seconds = (performance.now() - t0) / 1000;
if (sampler) clearInterval(sampler);
const cpu1 = pid ? procCpuMs() : null;
const rss1 = pid ? procRssMb("VmRSS") : null;
agent.destroy();

const ok = results.filter((r) => r.ok);
const stat = (key) => {
  const xs = ok.map((r) => r[key]).filter((x) => typeof x === "number");
  return {
    p50: round1(percentile(xs, 50)),
    p95: round1(percentile(xs, 95)),
    p99: round1(percentile(xs, 99)),
    mean: xs.length ? round1(xs.reduce((a, b) => a + b, 0) / xs.length) : Number.NaN,
    max: xs.length ? round1(Math.max(...xs)) : Number.NaN,
  };
};
const out = {
  label: opts.label ?? "",
  adapter: adapterName,
  url: baseUrls.join(","),
  n: total,
  c: concurrency,
  warmup,
  driver: "bench/mini-load.mjs",
  completed: results.length,
  ok: ok.length,
  errors: results.length - ok.length,
  elapsedS: Math.round(seconds * 1000) / 1000,
  runsPerS: round1(ok.length / seconds),
  totalMs: stat("totalMs"),
  runMs: stat("runMs"),
  createMs: stat("createMs"),
  ttfeMs: stat("ttfeMs"),
  lastEvMs: stat("lastEvMs"),
  tokenMs: tokens
    ? {
        count: tokenMs.length,
        p50: round1(percentile(tokenMs, 50)),
        p99: round1(percentile(tokenMs, 99, true)),
        max: round1(tokenMs.at(-1) ?? Number.NaN),
      }
    : null,
  eventsPerRun: ok.length ? round1(ok.reduce((a, r) => a + (r.events ?? 0), 0) / ok.length) : 0,
  server: pid
    ? {
        pid,
        rssMbStart: rss0,
        rssMbEnd: rss1,
        rssMbPeakSampled: Math.max(peakRss, rss1 ?? 0),
        hwmMb: procRssMb("VmHWM"),
        cpuMs: cpu0 != null && cpu1 != null ? cpu1 - cpu0 : null,
        cpuMsPerRun: cpu0 != null && cpu1 != null && ok.length ? round1((cpu1 - cpu0) / ok.length) : null,
      }
    : null,
  firstErrors: results
    .filter((r) => !r.ok)
    .slice(0, 3)
    .map((r) => r.detail),
};
const s = out.server;
console.log(
  `${out.label ? `[${out.label}] ` : ""}adapter=${out.adapter} n=${out.n} c=${out.c} warmup=${warmup} (mini-load)`,
);
console.log(`  runs ok ${out.ok}/${out.completed}, errors ${out.errors}, ${out.elapsedS}s, ${out.runsPerS} runs/s`);
console.log(
  `  latency total (create+run) ms: p50 ${out.totalMs.p50}  p95 ${out.totalMs.p95}  p99 ${out.totalMs.p99}  mean ${out.totalMs.mean}  max ${out.totalMs.max}`,
);
console.log(`  latency run stream ms:         p50 ${out.runMs.p50}  p95 ${out.runMs.p95}  p99 ${out.runMs.p99}`);
console.log(
  `  run start -> last event ms:    p50 ${out.lastEvMs.p50}  p95 ${out.lastEvMs.p95}  p99 ${out.lastEvMs.p99}`,
);
if (out.tokenMs) {
  const t = out.tokenMs;
  console.log(
    `  token latency (upstream send -> received) ms: p50 ${t.p50}  p99 ${t.p99}  max ${t.max}  (${t.count} tokens)`,
  );
}
if (s) {
  console.log(
    `  server pid ${s.pid}: VmRSS start ${s.rssMbStart} MB, end ${s.rssMbEnd} MB, peak(sampled) ${s.rssMbPeakSampled} MB, VmHWM ${s.hwmMb} MB; CPU ${s.cpuMs} ms (${s.cpuMsPerRun} ms/run)`,
  );
}
if (opts.json) writeFileSync(opts.json, JSON.stringify(out, null, 2));
process.exit(out.errors > Math.floor(total * 0.05) ? 1 : 0);
