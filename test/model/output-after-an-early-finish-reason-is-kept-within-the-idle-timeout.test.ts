import type http from "node:http";
import { afterEach, expect, it } from "vitest";
import { FINISH_GRACE_MS } from "../../src/model/client-settings.js";
import { createOpenAIModelClient } from "../../src/model/openai-client.js";
import { type RawUpstream, startRawUpstream } from "../helpers/raw-upstream.js";
import { sse } from "../model/raw-harness.js";
import { request } from "../model/support.js";

/**
 * Some upstreams send finish_reason early (with the first tool-call chunk, or on every chunk)
 * and go on streaming the reply after it. FINISH_GRACE_MS was meant only for what follows a
 * whole reply (usage, `[DONE]`): output still arriving after the finish_reason, with pauses
 * well within the configured idle timeout, must not be cut at FINISH_GRACE_MS and the partial
 * reply kept as if whole.
 */
let upstream: RawUpstream | undefined;
afterEach(() => {
  upstream?.close();
  upstream = undefined;
});

it("a tool call whose arguments keep streaming after an early finish_reason is kept whole", async () => {
  const [first, rest] = [
    sse(
      [
        {
          choices: [
            {
              index: 0,
              delta: {
                role: "assistant",
                tool_calls: [
                  { index: 0, id: "call_1", type: "function", function: { name: "lookup", arguments: '{"key":' } },
                ],
              },
              finish_reason: "tool_calls",
            },
          ],
        },
      ],
      { done: false },
    ),
    sse([
      {
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, function: { arguments: '"k"}' } }] },
            finish_reason: "tool_calls",
          },
        ],
      },
    ]),
  ];
  upstream = await startRawUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const w of first) res.write(w);
      // A pause longer than FINISH_GRACE_MS, far shorter than the idle timeout (60 s).
      const timer = setTimeout(() => {
        for (const w of rest) res.write(w);
        res.end();
      }, FINISH_GRACE_MS + 1000);
      res.on("close", () => clearTimeout(timer));
    });
  });
  const client = createOpenAIModelClient({
    baseURL: upstream.baseURL,
    model: "m",
    maxRetries: 0,
    idleTimeoutMs: 60_000,
  });
  const result = await client.complete(request());
  expect(result.ok).toBe(true);
  if (!result.ok) return;
  expect(result.toolCalls).toHaveLength(1);
  // Actual: {"key": (half) — the stream was cut FINISH_GRACE_MS after the finish_reason and the
  // half-streamed arguments kept as the reply.
  expect(result.toolCalls[0]?.input).toBe('{"key":"k"}');
}, 20_000);

it("a reply that brought output after its finish_reason's chunk and then stalls fails MODEL_TIMEOUT, not kept half", async () => {
  const chunks = [
    { choices: [{ index: 0, delta: { role: "assistant", content: "Half" }, finish_reason: "stop" }] },
    { choices: [{ index: 0, delta: { content: " of it" }, finish_reason: "stop" }] },
    // A chunk with no output after output that followed the finish_reason: not the reply's end.
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  ];
  upstream = await startRawUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const w of sse(chunks, { done: false })) res.write(w);
    });
  });
  const client = createOpenAIModelClient({ baseURL: upstream.baseURL, model: "m", maxRetries: 0, idleTimeoutMs: 300 });
  expect(await client.complete(request())).toMatchObject({ ok: false, code: "MODEL_TIMEOUT" });
});
