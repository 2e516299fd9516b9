/**
 * One model reply sent as a single 25 MB chunk: how long the client takes to give it up
 * (MODEL_OUTPUT_TOO_LARGE) and the longest the event loop was blocked meanwhile, with the
 * default output cap (1,000,000 characters) and with the largest (100,000,000, where the
 * 8 MiB limit on one event applies). Prints its figures; run with `npx tsx bench/huge-chunk.ts`.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createOpenAIModelClient } from "../src/model/openai-client.js";
import { startFakeUpstream } from "../test/fakes/openai-upstream.js";

const upstream = await startFakeUpstream();
const piece = "x".repeat(1024 * 1024);
const body = () => [
  'data: {"choices":[{"index":0,"delta":{"content":"',
  ...Array.from({ length: 25 }, () => piece),
  '"}}]}\n\n',
  "data: [DONE]\n\n",
];

for (const maxOutputChars of [1_000_000, 100_000_000]) {
  const client = createOpenAIModelClient({ baseURL: upstream.baseURL, model: "m", maxOutputChars, maxRetries: 0 });
  const rounds: { ms: number; blockedMs: number; code: string }[] = [];
  for (let i = 0; i < 5; i++) {
    upstream.enqueue({ raw: body() });
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const started = performance.now();
    const result = await client.complete({
      messages: [{ id: "u", role: "user", content: "hi" }],
      tools: [],
      signal: new AbortController().signal,
    });
    const ms = performance.now() - started;
    delay.disable();
    rounds.push({ ms, blockedMs: delay.max / 1e6, code: result.ok ? "ok" : result.code });
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  console.log(
    `MODEL_MAX_OUTPUT_CHARS=${maxOutputChars}: ${rounds[0]?.code}; to give up ${median(rounds.map((r) => r.ms)).toFixed(1)} ms (median of 5), longest event-loop block ${median(rounds.map((r) => r.blockedMs)).toFixed(1)} ms (median), worst ${Math.max(...rounds.map((r) => r.blockedMs)).toFixed(1)} ms`,
  );
}
await upstream.close();
