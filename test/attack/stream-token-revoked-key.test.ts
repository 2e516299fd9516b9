/**
 * The operator revokes a key (it leaked, a tenant left): it is taken out of AGENT_API_KEYS and
 * the server restarted. With STREAM_TOKEN_SECRET set (needed for tokens to work across
 * instances whose key lists are rolled one at a time), the stream tokens that key made before
 * still open its runs' events until they expire (STREAM_TOKEN_TTL_MS, up to 24 h): the auth hook
 * takes the token's owner id without asking whether any configured key still has it.
 */
import { afterEach, expect, it } from "vitest";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const REVOKED = "key-revoked-0123456789";
const KEPT = "key-kept-0123456789abc";
const SECRET = "stream-token-secret-0123456789abcdef-xyz";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a revoked key's stream token no longer opens its run's events", async () => {
  server = await startTestServer({
    env: { AGENT_API_KEYS: `${REVOKED},${KEPT}`, STREAM_TOKEN_SECRET: SECRET, STREAM_TOKEN_TTL_MS: "3600000" },
  });
  server.upstream.enqueue({ text: "the secret answer" });
  const session = (await server.request("POST", "/sessions", { body: {}, headers: as(REVOKED) })).body;
  const done = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
    body: { input: "hi" },
    headers: as(REVOKED),
  });
  expect(done.body.run.status).toBe("finished");
  const token = (await server.request("POST", `/runs/${done.body.run.id}/stream-token`, { headers: as(REVOKED) })).body;
  const dir = server.dir;
  await server.close({ keepDir: true });

  // Restarted without the revoked key (same database, same secret).
  server = await startTestServer({
    dir,
    env: { AGENT_API_KEYS: KEPT, STREAM_TOKEN_SECRET: SECRET, STREAM_TOKEN_TTL_MS: "3600000" },
  });
  // The key itself is refused...
  expect((await server.request("GET", `/runs/${done.body.run.id}`, { headers: as(REVOKED) })).status).toBe(401);
  // ...and so should be what it issued.
  const stream = await openSse(`${server.url}${token.eventsUrl}`);
  const events = stream.status === 200 ? (await stream.ended).map((e) => e.event) : [];
  expect([stream.status, events]).toEqual([401, []]);
});
