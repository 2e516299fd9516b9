/**
 * Upstream streams a hostile or unusual provider may send, each of which the client mishandled:
 * lines ended by CR alone (legal SSE) made the parser scan each chunk to its end for an LF at
 * every line (quadratic: a chunk of blank CR lines held the event loop for seconds); two whole
 * tool calls without an index sharing an id were merged into one (the second's name dropped,
 * its arguments appended); an `event: error` whose data is plain text was reported as a bad
 * chunk, its message lost.
 */
import type http from "node:http";
import { afterEach, expect, it, vi } from "vitest";
import { createOpenAIModelClient } from "../../src/model/openai-client.js";
import { SseParser } from "../../src/model/sse-events.js";
import { type RawUpstream, startRawUpstream } from "../helpers/raw-upstream.js";

const upstreams: RawUpstream[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const u of upstreams.splice(0)) u.close();
});

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

async function serve(write: (res: http.ServerResponse) => void): Promise<string> {
  const u = await startRawUpstream((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      write(res);
      res.end();
    });
  });
  upstreams.push(u);
  return u.baseURL;
}

const client = (baseURL: string) =>
  createOpenAIModelClient({ baseURL, apiKey: "sk-x", model: "m", maxRetries: 0, idleTimeoutMs: 20_000 });
const request = () => ({
  messages: [{ id: "u", role: "user" as const, content: "hi" }],
  tools: [],
  signal: new AbortController().signal,
});

it("a chunk of lines ended by CR alone is looked through for an LF once, not once a line", () => {
  const parser = new SseParser(() => 8 * 1024 * 1024);
  const indexOf = vi.spyOn(Buffer.prototype, "indexOf");
  parser.push(Buffer.alloc(10_000, 0x0d), []);
  const lfScans = indexOf.mock.calls.filter(([value]) => value === 0x0a).length;
  expect(lfScans).toBeLessThanOrEqual(1);
  expect(parser.failure).toBeNull();
});

it("two whole tool calls without an index, with one id and different functions, stay two calls", async () => {
  const call = (name: string, args: string) => ({
    id: "call_0",
    type: "function",
    function: { name, arguments: args },
  });
  const baseURL = await serve((res) => {
    res.write(chunk({ role: "assistant", tool_calls: [call("lookup", '{"key":"a"}')] }));
    res.write(chunk({ tool_calls: [call("read_file", '{"path":"x.txt"}')] }));
    res.write(chunk({}, "tool_calls"));
    res.write("data: [DONE]\n\n");
  });
  const result = await client(baseURL).complete(request());
  expect(result.ok).toBe(true);
  if (!result.ok) return;
  expect(result.toolCalls.map((c) => [c.name, c.input])).toEqual([
    ["lookup", '{"key":"a"}'],
    ["read_file", '{"path":"x.txt"}'],
  ]);
});

it("an `event: error` whose data is plain text is the upstream's error (MODEL_UPSTREAM, its text), not a bad chunk", async () => {
  const baseURL = await serve((res) => {
    res.write(chunk({ role: "assistant", content: "hi" }));
    res.write("event: error\ndata: upstream overloaded, try again later\n\n");
  });
  const result = await client(baseURL).complete(request());
  expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
  expect(result.ok ? "" : result.message).toContain("upstream overloaded");
});
