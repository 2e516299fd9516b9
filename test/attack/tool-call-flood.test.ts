import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withUniqueIds } from "../../src/agent/unique-tool-call-ids.js";
import { MAX_TOOL_CALLS_PER_REPLY } from "../../src/model/stream-assembler.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** A raw Chat Completions stream of `count` one-character tool calls (an unknown tool `a`, no arguments), all with `id`. */
function floodStream(count: number, id: (i: number) => string): string[] {
  const chunk = (choice: unknown) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "fake-model", choices: [choice] })}\n\n`;
  const pieces: string[] = [];
  let buffer = "";
  for (let i = 0; i < count; i++) {
    buffer += chunk({
      index: 0,
      delta: { tool_calls: [{ index: i, id: id(i), type: "function", function: { name: "a", arguments: "" } }] },
      finish_reason: null,
    });
    if (buffer.length > 65_536) {
      pieces.push(buffer);
      buffer = "";
    }
  }
  pieces.push(`${buffer}${chunk({ index: 0, delta: {}, finish_reason: "tool_calls" })}data: [DONE]\n\n`);
  return pieces;
}

describe("a model reply flooding tool calls (a malicious or compromised upstream)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("is cut off past MAX_TOOL_CALLS_PER_REPLY calls: nothing of it is stored, the server stays responsive", async () => {
    // Within MODEL_MAX_OUTPUT_CHARS (each call is 1-6 characters); before, every call was stored
    // with a result message, and 20,000 calls sharing one id held the event loop for ~20 s.
    server.upstream.enqueue({ raw: floodStream(MAX_TOOL_CALLS_PER_REPLY + 1, () => "dup") });
    const session = (await server.request("POST", "/sessions", { body: {} })).body as { id: string };
    const started = Date.now();
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "go" },
    });
    const { run } = waited.body as { run: { stopReason: string; error: { code: string; message: string } | null } };
    expect(run.stopReason).toBe("error");
    expect(run.error?.code).toBe("MODEL_OUTPUT_TOO_LARGE");
    expect(run.error?.message).toContain(`more than ${MAX_TOOL_CALLS_PER_REPLY} tool calls`);
    expect(Date.now() - started).toBeLessThan(10_000);
    const messages = (await server.request("GET", `/sessions/${session.id}/messages?limit=200`)).body as {
      items: Array<{ role: string }>;
    };
    expect(messages.items.map((m) => m.role)).toEqual(["user"]);
  }, 60_000);
});

describe("withUniqueIds", () => {
  it("renames thousands of calls sharing one id in linear time", () => {
    const calls = Array.from({ length: 20_000 }, () => ({ id: "dup", name: "a", input: "" }));
    const started = performance.now();
    const renamed = withUniqueIds(calls, new Set(["dup-2", "dup-5"]));
    const ms = performance.now() - started;
    expect(new Set(renamed.map((c) => c.id)).size).toBe(20_000);
    expect(renamed.slice(0, 4).map((c) => c.id)).toEqual(["dup", "dup-3", "dup-4", "dup-6"]);
    expect(ms).toBeLessThan(1_000);
  }, 120_000);
});
