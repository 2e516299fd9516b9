/**
 * MAX_STREAMS_PER_KEY, driven as the attacker did: one key opening long-lived connections
 * (event streams, streamed starts, chat streams, `?wait=true`) to its own run awaiting
 * approval, until the server would run out of descriptors for everyone else.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { openSse, type SseStream } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY_A = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
let server: TestServer | undefined;
const opened: SseStream[] = [];
afterEach(async () => {
  for (const stream of opened.splice(0)) stream.close();
  await server?.close();
  server = undefined;
});

async function keyedServer(): Promise<TestServer> {
  const s = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}`, MAX_STREAMS_PER_KEY: "3" } });
  // Whatever the model is asked after a decision: a plain answer that ends the run.
  s.upstream.fallback = () => ({ text: "done" });
  return s;
}

/** A new session of `key` with a run that awaits approval of its `shell` call. */
async function runAwaitingShell(s: TestServer, key: string): Promise<{ sessionId: string; runId: string }> {
  s.upstream.enqueue({ toolCalls: [{ id: "call_sh", name: "shell", arguments: '{"command":"echo hi"}' }] });
  const session = await s.request("POST", "/sessions", { body: {}, headers: as(key) });
  expect(session.status).toBe(201);
  const run = await s.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "go" }, headers: as(key) });
  expect(run.status).toBe(201);
  await until(
    async () => (await s.request("GET", `/runs/${run.body.id}`, { headers: as(key) })).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  return { sessionId: session.body.id, runId: run.body.id };
}

async function open(url: string, options: Parameters<typeof openSse>[1] = {}): Promise<SseStream> {
  const stream = await openSse(url, options);
  opened.push(stream);
  return stream;
}

/** An event stream of `runId` as `key`, with its events up to the approval request received. */
async function watching(s: TestServer, runId: string, key: string): Promise<SseStream> {
  const stream = await open(`${s.url}/runs/${runId}/events`, { headers: as(key) });
  expect(stream.status).toBe(200);
  await stream.waitFor((e) => e.event === "approval.requested");
  return stream;
}

/** Asserts `stream` is the refusal: 429 TOO_MANY_STREAMS in the JSON envelope with Retry-After. */
async function expectRefused(stream: SseStream): Promise<void> {
  expect(stream.status).toBe(429);
  expect(stream.headers["content-type"]).toMatch(/^application\/json/);
  expect(stream.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
  const body = JSON.parse(await stream.body);
  expect(body).toEqual({
    error: {
      code: "TOO_MANY_STREAMS",
      message: expect.stringContaining("MAX_STREAMS_PER_KEY"),
      details: { limit: 3, scope: "key" },
    },
  });
}

describe("MAX_STREAMS_PER_KEY: long-lived connections one key may hold", () => {
  it("a key at its cap of event streams gets 429 TOO_MANY_STREAMS on every streaming route; other keys and /healthz are served", async () => {
    server = await keyedServer();
    const { sessionId, runId } = await runAwaitingShell(server, KEY_A);
    for (let i = 0; i < 3; i++) await watching(server, runId, KEY_A);

    await expectRefused(await open(`${server.url}/runs/${runId}/events`, { headers: as(KEY_A) }));
    // A stream token speaks for the key that made it: it gets no stream past that key's cap.
    const token = await server.request("POST", `/runs/${runId}/stream-token`, { headers: as(KEY_A) });
    expect(token.status).toBe(200);
    await expectRefused(await open(`${server.url}${token.body.eventsUrl}`));
    await expectRefused(await open(`${server.url}/sessions/${sessionId}/chat/stream`, { headers: as(KEY_A) }));
    await expectRefused(await open(`${server.url}/sessions/${sessionId}/chat/c1/stream`, { headers: as(KEY_A) }));
    // Refused before anything starts: no run is created by a streamed start or a chat message.
    const idle = await server.request("POST", "/sessions", { body: {}, headers: as(KEY_A) });
    expect(idle.status).toBe(201);
    await expectRefused(
      await open(`${server.url}/sessions/${idle.body.id}/runs`, {
        method: "POST",
        body: { input: "streamed" },
        headers: as(KEY_A),
      }),
    );
    await expectRefused(
      await open(`${server.url}/sessions/${idle.body.id}/chat`, {
        method: "POST",
        body: { messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }] },
        headers: as(KEY_A),
      }),
    );
    const runsOfIdle = await server.request("GET", `/sessions/${idle.body.id}/runs`, { headers: as(KEY_A) });
    expect(runsOfIdle.body.items).toEqual([]);
    // What holds no connection open is not limited.
    expect((await server.request("GET", `/runs/${runId}`, { headers: as(KEY_A) })).status).toBe(200);

    // Another key is not affected by A's streams.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const b = await runAwaitingShell(server, KEY_B);
    await watching(server, b.runId, KEY_B);
    const bStart = await server.request("POST", "/sessions", { body: {}, headers: as(KEY_B) });
    expect(bStart.status).toBe(201);
    // B cannot read A's run, stream or no stream.
    expect((await open(`${server.url}/runs/${runId}/events`, { headers: as(KEY_B) })).status).toBe(404);
  });

  it("a slot is given back when a client goes away and when a stream ends with its run", async () => {
    server = await keyedServer();
    const s = server;
    const { runId } = await runAwaitingShell(s, KEY_A);
    const streams = [await watching(s, runId, KEY_A), await watching(s, runId, KEY_A), await watching(s, runId, KEY_A)];
    await expectRefused(await open(`${s.url}/runs/${runId}/events`, { headers: as(KEY_A) }));

    // The client of one stream goes away: its slot is free once the server saw the close.
    streams[0]?.close();
    const again = await until(
      () => open(`${s.url}/runs/${runId}/events`, { headers: as(KEY_A) }),
      (stream) => stream.status === 200,
      "a stream to open after another was closed",
    );
    await again.waitFor((e) => e.event === "approval.requested");
    await expectRefused(await open(`${s.url}/runs/${runId}/events`, { headers: as(KEY_A) }));

    // The run ends: every stream of it ends, and every slot is free again.
    const denied = await s.request("POST", `/runs/${runId}/approvals/call_sh`, {
      body: { decision: "deny" },
      headers: as(KEY_A),
    });
    expect(denied.status).toBe(200);
    for (const stream of [again, streams[1], streams[2]]) {
      expect((await stream?.ended)?.at(-1)?.event).toBe("run.finished");
    }
    const next = await runAwaitingShell(s, KEY_A);
    await until(
      () => open(`${s.url}/runs/${next.runId}/events`, { headers: as(KEY_A) }),
      (stream) => stream.status === 200,
      "a stream to open once the earlier ones ended",
    );
    await watching(s, next.runId, KEY_A);
    await watching(s, next.runId, KEY_A);
  });

  it("?wait=true holds a slot until it is answered; a wait over the cap is 429 and starts no run", async () => {
    server = await keyedServer();
    const s = server;
    const waits: { sessionId: string; answer: Promise<Response> }[] = [];
    for (let i = 0; i < 3; i++) {
      s.upstream.enqueue({ toolCalls: [{ id: "call_sh", name: "shell", arguments: '{"command":"echo hi"}' }] });
      const session = (await s.request("POST", "/sessions", { body: {}, headers: as(KEY_A) })).body;
      const answer = fetch(`${s.url}/sessions/${session.id}/runs?wait=true`, {
        method: "POST",
        headers: { ...as(KEY_A), "content-type": "application/json" },
        body: JSON.stringify({ input: "go" }),
      });
      answer.catch(() => {});
      await until(
        async () => (await s.request("GET", `/sessions/${session.id}/runs`, { headers: as(KEY_A) })).body.items,
        (items) => items[0]?.status === "awaiting_approval",
        "the waited run's approval request",
      );
      waits.push({ sessionId: session.id, answer });
    }

    const idle = (await s.request("POST", "/sessions", { body: {}, headers: as(KEY_A) })).body;
    const refused = await s.request("POST", `/sessions/${idle.id}/runs?wait=true`, {
      body: { input: "over" },
      headers: as(KEY_A),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(refused.body.error).toMatchObject({ code: "TOO_MANY_STREAMS", details: { limit: 3, scope: "key" } });
    expect((await s.request("GET", `/sessions/${idle.id}/runs`, { headers: as(KEY_A) })).body.items).toEqual([]);
    // Waits and streams share the cap.
    const first = waits[0] as (typeof waits)[number];
    const runId = (await s.request("GET", `/sessions/${first.sessionId}/runs`, { headers: as(KEY_A) })).body.items[0]
      .id;
    await expectRefused(await open(`${s.url}/runs/${runId}/events`, { headers: as(KEY_A) }));
    // A plain start (answered at once) is not a wait.
    s.upstream.enqueue({ text: "quick" });
    expect(
      (await s.request("POST", `/sessions/${idle.id}/runs`, { body: { input: "x" }, headers: as(KEY_A) })).status,
    ).toBe(201);

    // The first wait is answered: its slot is free.
    await s.request("POST", `/runs/${runId}/approvals/call_sh`, { body: { decision: "deny" }, headers: as(KEY_A) });
    expect((await first.answer).status).toBe(200);
    const stream = await until(
      () => open(`${s.url}/runs/${runId}/events`, { headers: as(KEY_A) }),
      (opened) => opened.status === 200,
      "a stream once a wait was answered",
    );
    expect((await stream.ended).at(-1)?.event).toBe("run.finished");
  });

  it("without keys nothing is limited: one client opens more streams than any per-key default", async () => {
    server = await startTestServer();
    const s = server;
    s.upstream.fallback = () => ({ text: "done" });
    s.upstream.enqueue({ toolCalls: [{ id: "call_sh", name: "shell", arguments: '{"command":"echo hi"}' }] });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const run = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
    const streams = await Promise.all(Array.from({ length: 120 }, () => open(`${s.url}/runs/${run.id}/events`)));
    expect(streams.map((stream) => stream.status)).toEqual(streams.map(() => 200));
  });

  it("is validated at start like its neighbours: a number, needs keys; by default 100 at most a quarter of the open-file limit", () => {
    const base = { OPENAI_MODEL: "m", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" };
    const keyed = { ...base, AGENT_API_KEYS: KEY_A };
    expect(loadConfig(keyed, { openFileLimit: 65_536 }).MAX_STREAMS_PER_KEY).toBe(100);
    expect(loadConfig(keyed, { openFileLimit: 256 }).MAX_STREAMS_PER_KEY).toBe(64);
    expect(loadConfig(keyed, { openFileLimit: 2 }).MAX_STREAMS_PER_KEY).toBe(1);
    expect(loadConfig(keyed, { openFileLimit: null }).MAX_STREAMS_PER_KEY).toBe(100);
    expect(loadConfig({ ...keyed, MAX_STREAMS_PER_KEY: "7" }).MAX_STREAMS_PER_KEY).toBe(7);
    expect(loadConfig({ ...keyed, MAX_STREAMS_PER_KEY: "0" }).MAX_STREAMS_PER_KEY).toBe(0);
    expect(loadConfig(base).MAX_STREAMS_PER_KEY).toBe(0);
    expect(() => loadConfig({ ...keyed, MAX_STREAMS_PER_KEY: "ten" })).toThrow(/MAX_STREAMS_PER_KEY: must be a whole/);
    expect(() => loadConfig({ ...base, MAX_STREAMS_PER_KEY: "5" })).toThrow(/MAX_STREAMS_PER_KEY: .*AGENT_API_KEYS/);
  });
});
