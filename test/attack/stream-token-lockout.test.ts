/**
 * A stream token is the narrow credential a key hands to a browser: read the events of one run,
 * for STREAM_TOKEN_TTL_MS. Whoever held it (an end user of the web app that holds the key, a
 * proxy log, a shared link) could open MAX_STREAMS_PER_KEY event streams with it, each counted
 * for the key, and hold them for as long as the run lasts, long after the token expired: the
 * key itself then got 429 TOO_MANY_STREAMS on every event stream, `?wait=true`, steer and chat
 * route. Now a key's stream tokens hold at most half of its slots.
 */
import { afterEach, expect, it, vi } from "vitest";
import { openSse, type SseStream } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY_A = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
let server: TestServer | undefined;
const opened: SseStream[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) s.close();
  await server?.close();
  server = undefined;
});

it("the holder of one run's stream token cannot take every stream slot of the key that issued it", async () => {
  server = await startTestServer({
    env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}`, MAX_STREAMS_PER_KEY: "4", STREAM_TOKEN_TTL_MS: "1000" },
  });
  const s = server;
  s.upstream.fallback = () => ({ text: "done" });
  // Key A's run waits for approval (it stays live: its streams stay open).
  s.upstream.enqueue({ toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a","content":"x"}' }] });
  const session = (await s.request("POST", "/sessions", { body: {}, headers: as(KEY_A) })).body;
  const run = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" }, headers: as(KEY_A) }))
    .body;
  await until(
    async () => (await s.request("GET", `/runs/${run.id}`, { headers: as(KEY_A) })).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  // The clock (Date.now, which the token's expiry reads) held still while the token's streams
  // open, then stepped past its TTL: a loaded machine could take the whole TTL (1 s) to open them.
  const issuedAt = Date.now();
  const clock = vi.spyOn(Date, "now").mockReturnValue(issuedAt);
  try {
    // A hands a stream token to a browser, as the README tells it to.
    const token = (await s.request("POST", `/runs/${run.id}/stream-token`, { headers: as(KEY_A) })).body;

    // The browser's user opens as many streams as the token lets it: half the key's.
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const stream = await openSse(`${s.url}${token.eventsUrl}`);
      opened.push(stream);
      statuses.push(stream.status);
    }
    expect(statuses).toEqual([200, 200, 429, 429]);
    // The token has expired meanwhile; its streams are still open, and still counted.
    clock.mockReturnValue(issuedAt + 1200);
    expect((await openSse(`${s.url}${token.eventsUrl}`)).status).toBe(401);
  } finally {
    clock.mockRestore();
  }

  // Key A itself, watching its own run with its own key:
  const own = await openSse(`${s.url}/runs/${run.id}/events`, { headers: as(KEY_A) });
  opened.push(own);
  const ownBody = own.status === 200 ? "" : await own.body;
  expect([own.status, ownBody]).toEqual([200, ""]);
});
