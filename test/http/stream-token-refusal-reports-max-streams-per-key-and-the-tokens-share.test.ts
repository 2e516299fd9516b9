/**
 * A key's stream tokens may hold at most half of its MAX_STREAMS_PER_KEY slots (README,
 * Configuration). A token's stream refused for that is 429 TOO_MANY_STREAMS whose
 * `details.limit` is MAX_STREAMS_PER_KEY, as openapi.yaml's TooManyStreamsError documents, told
 * apart by `scope: "stream-token"` and `tokenLimit` (the tokens' share), and whose message names
 * that share rather than claiming the key holds its maximum: the key itself, holding 2 of its 4
 * slots, still opens its own stream.
 */
import { afterEach, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { openSse, type SseStream } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY = "key-a-0123456789abcdef";
const as = { authorization: `Bearer ${KEY}` };
let server: TestServer | undefined;
const opened: SseStream[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) s.close();
  await server?.close();
  server = undefined;
});

it("a stream token's stream refused for the tokens' half of the slots reports MAX_STREAMS_PER_KEY as its limit, not that the key is full", async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: KEY, MAX_STREAMS_PER_KEY: "4" } });
  const s = server;
  s.upstream.fallback = () => ({ text: "done" });
  s.upstream.enqueue({ toolCalls: [{ id: "call_sh", name: "shell", arguments: '{"command":"echo hi"}' }] });
  const session = (await s.request("POST", "/sessions", { body: {}, headers: as })).body;
  const run = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" }, headers: as })).body;
  await until(
    async () => (await s.request("GET", `/runs/${run.id}`, { headers: as })).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  const token = (await s.request("POST", `/runs/${run.id}/stream-token`, { headers: as })).body;
  for (let i = 0; i < 2; i++) {
    const stream = await openSse(`${s.url}${token.eventsUrl}`);
    opened.push(stream);
    expect(stream.status).toBe(200);
  }

  const refused = await openSse(`${s.url}${token.eventsUrl}`);
  opened.push(refused);
  expect(refused.status).toBe(429);
  const body = JSON.parse(await refused.body);
  expect(body.error.code).toBe("TOO_MANY_STREAMS");
  validateResponse({
    method: "GET",
    path: "/runs/{id}/events",
    status: 429,
    body,
    contentType: refused.headers["content-type"] ?? null,
    headers: refused.headers,
  });
  expect(body.error.details).toEqual({ limit: 4, scope: "stream-token", tokenLimit: 2 });
  expect(body.error.message).toMatch(/stream tokens .*2 of MAX_STREAMS_PER_KEY=4/);

  // The key itself is not full: it holds 2 of its 4 slots and can open its own stream.
  const own = await openSse(`${s.url}/runs/${run.id}/events`, { headers: as });
  opened.push(own);
  expect(own.status).toBe(200);

  // openapi.yaml: details.limit is MAX_STREAMS_PER_KEY; the message must not say the key holds its maximum.
  expect({
    limit: body.error.details.limit,
    keyFull: /API key already holds its maximum/.test(body.error.message),
  }).toEqual({
    limit: 4,
    keyFull: false,
  });
});
