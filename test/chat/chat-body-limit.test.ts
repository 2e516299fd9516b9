/**
 * POST /sessions/{id}/chat has its own body limit, CHAT_BODY_LIMIT_BYTES (the assistant message
 * useChat posts back holds every tool output of its run), while what it stores stays bounded as
 * elsewhere: a new run's input by BODY_LIMIT_BYTES. Such a body is read only on a stream slot of
 * its key (MAX_STREAMS_PER_KEY), taken before any of it is read.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CHAT_BODY_LIMIT_BYTES, loadConfig } from "../../src/config.js";
import { openSse, type SseStream } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const base = { OPENAI_API_KEY: "sk-test-key", OPENAI_MODEL: "fake-model" };
const KEY_A = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const userMessage = (text: string) => ({ messages: [{ id: "m1", role: "user", parts: [{ type: "text", text }] }] });

describe("CHAT_BODY_LIMIT_BYTES", () => {
  it("is 16 MiB by default, never below BODY_LIMIT_BYTES unless set, and refused naming it when out of range", () => {
    expect(DEFAULT_CHAT_BODY_LIMIT_BYTES).toBe(16 * 1_048_576);
    expect(loadConfig(base).CHAT_BODY_LIMIT_BYTES).toBe(DEFAULT_CHAT_BODY_LIMIT_BYTES);
    expect(loadConfig({ ...base, BODY_LIMIT_BYTES: String(32 * 1_048_576) }).CHAT_BODY_LIMIT_BYTES).toBe(
      32 * 1_048_576,
    );
    expect(loadConfig({ ...base, CHAT_BODY_LIMIT_BYTES: "2048" }).CHAT_BODY_LIMIT_BYTES).toBe(2048);
    for (const value of ["1023", String(100 * 1_048_576 + 1), "16MiB", "-1"]) {
      expect(() => loadConfig({ ...base, CHAT_BODY_LIMIT_BYTES: value }), value).toThrow(/CHAT_BODY_LIMIT_BYTES: /);
    }
  });
});

describe("a chat's body", () => {
  let server: TestServer;
  let stream: SseStream | undefined;
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        AGENT_API_KEYS: `${KEY_A},${KEY_B}`,
        BODY_LIMIT_BYTES: "2048",
        CHAT_BODY_LIMIT_BYTES: "65536",
        MAX_STREAMS_PER_KEY: "1",
      },
    });
  });
  afterAll(async () => {
    stream?.close();
    await server?.close();
  });

  it("over CHAT_BODY_LIMIT_BYTES is refused 413 naming it; one over BODY_LIMIT_BYTES alone is read", async () => {
    const sessionId = (await server.request("POST", "/sessions", { body: {}, headers: as(KEY_A) })).body.id;
    const over = await server.request("POST", `/sessions/${sessionId}/chat`, {
      body: { ...userMessage("hi"), padding: "x".repeat(70_000) },
      headers: as(KEY_A),
    });
    expect(over.status).toBe(413);
    expect(over.body.error).toEqual({
      code: "BODY_TOO_LARGE",
      message: expect.stringContaining("65536 bytes, CHAT_BODY_LIMIT_BYTES"),
    });
    // Over BODY_LIMIT_BYTES, under CHAT_BODY_LIMIT_BYTES: read (and answered for what it asks).
    const answered = await server.request("POST", `/sessions/${sessionId}/chat`, {
      body: { messages: [{ role: "assistant", parts: [{ type: "text", text: "x".repeat(10_000) }] }] },
      headers: as(KEY_A),
    });
    expect(answered.body.error.code).toBe("NOTHING_TO_CONTINUE");
  });

  it("starting a run with a text over BODY_LIMIT_BYTES is refused 413 naming it, and starts nothing", async () => {
    const sessionId = (await server.request("POST", "/sessions", { body: {}, headers: as(KEY_A) })).body.id;
    const res = await server.request("POST", `/sessions/${sessionId}/chat`, {
      body: userMessage("é".repeat(1025)),
      headers: as(KEY_A),
    });
    expect(res.status).toBe(413);
    expect(res.body.error).toEqual({
      code: "BODY_TOO_LARGE",
      message: expect.stringContaining("2048 bytes, BODY_LIMIT_BYTES"),
    });
    expect((await server.request("GET", `/sessions/${sessionId}/runs`, { headers: as(KEY_A) })).body.items).toEqual([]);
  });

  it("of a key holding all its streams is refused 429 before any of it is sent", async () => {
    server.upstream.enqueue({ toolCalls: [{ id: "call_sh", name: "shell", arguments: '{"command":"echo hi"}' }] });
    const sessionId = (await server.request("POST", "/sessions", { body: {}, headers: as(KEY_B) })).body.id;
    const run = await server.request("POST", `/sessions/${sessionId}/runs`, {
      body: { input: "go" },
      headers: as(KEY_B),
    });
    await until(
      async () => (await server.request("GET", `/runs/${run.body.id}`, { headers: as(KEY_B) })).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    stream = await openSse(`${server.url}/runs/${run.body.id}/events`, { headers: as(KEY_B) });
    expect(stream.status).toBe(200);

    // The head announces 60,000 bytes; none is sent, and the refusal comes all the same.
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${server.url}/sessions/${sessionId}/chat`, {
        method: "POST",
        agent: false,
        headers: { ...as(KEY_B), "content-type": "application/json", "content-length": "60000" },
      });
      req.on("error", reject);
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.flushHeaders();
    });
    expect(status).toBe(429);
  });
});
