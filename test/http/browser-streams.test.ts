import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { StreamTokens } from "../../src/http/stream-tokens.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY_A = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A finished run (one text reply) in a new session, as `key`. */
async function finishedRun(s: TestServer, headers: Record<string, string> = {}) {
  s.upstream.enqueue({ text: "hello" });
  const session = await s.request("POST", "/sessions", { body: {}, headers });
  const waited = await s.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
    body: { input: "hi" },
    headers,
  });
  return { sessionId: session.body.id as string, runId: waited.body.run.id as string };
}

/** The raw first bytes of an event stream's body. */
function rawStart(url: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: "text/event-stream", ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
  });
}

describe("event streams for browsers", () => {
  it("resuming a finished run at or past its last event is answered 204 (EventSource stops), before it is replayed", async () => {
    server = await startTestServer();
    const { runId } = await finishedRun(server);
    const all = await (await openSse(`${server.url}/runs/${runId}/events`)).ended;
    const last = all.at(-1)?.id as string;
    expect(all.at(-1)?.event).toBe("run.finished");
    for (const id of [last, String(Number(last) + 5)]) {
      const res = await fetch(`${server.url}/runs/${runId}/events`, { headers: { "last-event-id": id } });
      expect(res.status).toBe(204);
      expect(await res.text()).toBe("");
    }
    expect((await fetch(`${server.url}/runs/${runId}/events?after=${last}`)).status).toBe(204);
    const rest = await openSse(`${server.url}/runs/${runId}/events`, {
      headers: { "last-event-id": String(Number(last) - 1) },
    });
    expect(rest.status).toBe(200);
    expect((await rest.ended).map((e) => e.event)).toEqual(["run.finished"]);
  });

  it("a stream starts with a retry: hint", async () => {
    server = await startTestServer();
    const { runId } = await finishedRun(server);
    const { status, text } = await rawStart(`${server.url}/runs/${runId}/events`);
    expect(status).toBe(200);
    expect(text).toMatch(/^retry: \d+\n\n/);
    expect(text).toContain("event: run.finished");
  });

  it("201s carry a Location, and CORS exposes Location and WWW-Authenticate", async () => {
    server = await startTestServer({ env: { CORS_ORIGINS: "http://localhost:5173", AGENT_API_KEYS: KEY_A } });
    const origin = { origin: "http://localhost:5173" };
    const session = await server.request("POST", "/sessions", { body: {}, headers: { ...as(KEY_A), ...origin } });
    expect(session.status).toBe(201);
    expect(session.headers.get("location")).toBe(`/sessions/${session.body.id}`);
    expect(session.headers.get("access-control-expose-headers")?.split(/,\s*/)).toEqual(
      expect.arrayContaining(["location", "www-authenticate", "retry-after", "x-request-id"]),
    );
    server.upstream.enqueue({ text: "ok" });
    const run = await server.request("POST", `/sessions/${session.body.id}/runs`, {
      body: { input: "go" },
      headers: as(KEY_A),
    });
    expect(run.status).toBe(201);
    expect(run.headers.get("location")).toBe(`/runs/${run.body.id}`);
    await server.ctx.manager.waitForFinish(run.body.id);
  });
});

describe("stream tokens", () => {
  it("let EventSource-style requests (no header) read the one run they were issued for, and nothing else", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}` } });
    const mine = await finishedRun(server, as(KEY_A));
    const other = await finishedRun(server, as(KEY_A));
    expect((await fetch(`${server.url}/runs/${mine.runId}/events`)).status).toBe(401);
    const issued = await server.request("POST", `/runs/${mine.runId}/stream-token`, { headers: as(KEY_A) });
    expect(issued.status).toBe(200);
    const { token, expiresAt, eventsUrl } = issued.body;
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(290_000);
    expect(eventsUrl).toBe(`/runs/${mine.runId}/events?token=${encodeURIComponent(token)}`);

    const read = await openSse(server.url + eventsUrl);
    expect(read.status).toBe(200);
    expect((await read.ended).at(-1)?.event).toBe("run.finished");

    const q = `?token=${encodeURIComponent(token)}`;
    // Another run, even the same key's; another route; as a bearer key; altered: all refused.
    expect((await fetch(`${server.url}/runs/${other.runId}/events${q}`)).status).toBe(401);
    for (const path of [`/runs/${mine.runId}${q}`, `/runs/${mine.runId}/approvals${q}`, `/sessions${q}`]) {
      expect((await fetch(server.url + path)).status).toBe(401);
    }
    expect(
      (
        await fetch(`${server.url}/runs/${mine.runId}`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${token}` },
        })
      ).status,
    ).toBe(401);
    expect((await fetch(`${server.url}/runs/${mine.runId}/stream-token${q}`, { method: "POST" })).status).toBe(401);
    const flipped = token.slice(0, -2) + (token.endsWith("A") ? "BB" : "AA");
    expect((await fetch(`${server.url}/runs/${mine.runId}/events?token=${encodeURIComponent(flipped)}`)).status).toBe(
      401,
    );
    // Another key cannot get a token for a run it does not own.
    expect((await server.request("POST", `/runs/${mine.runId}/stream-token`, { headers: as(KEY_B) })).status).toBe(404);
  });

  it("a token forged from one's own (payload re-signed without the secret, or another run named) is refused", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY_A } });
    const a = await finishedRun(server, as(KEY_A));
    const b = await finishedRun(server, as(KEY_A));
    const { token } = (await server.request("POST", `/runs/${a.runId}/stream-token`, { headers: as(KEY_A) })).body;
    const [payload, signature] = token.split(".");
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
    const swapped = Buffer.from(JSON.stringify({ ...claims, r: b.runId })).toString("base64url");
    expect((await fetch(`${server.url}/runs/${b.runId}/events?token=${swapped}.${signature}`)).status).toBe(401);
    const longer = Buffer.from(JSON.stringify({ ...claims, e: claims.e + 86_400_000 })).toString("base64url");
    expect((await fetch(`${server.url}/runs/${a.runId}/events?token=${longer}.${signature}`)).status).toBe(401);
  });

  it("expire after their time, and survive a restart with the same keys", () => {
    let now = 1_000_000;
    const secret = StreamTokens.secretFrom({ apiKeys: [KEY_A] });
    const tokens = new StreamTokens({ secret, ttlMs: 300_000, now: () => now });
    const { token } = tokens.issue({ runId: "run_1", owner: "o" });
    const restarted = new StreamTokens({
      secret: StreamTokens.secretFrom({ apiKeys: [KEY_A] }),
      ttlMs: 1,
      now: () => now,
    });
    expect(restarted.verify(token)).toEqual({ runId: "run_1", owner: "o" });
    const rekeyed = new StreamTokens({
      secret: StreamTokens.secretFrom({ apiKeys: [KEY_B] }),
      ttlMs: 1,
      now: () => now,
    });
    expect(rekeyed.verify(token)).toBeNull();
    now += 299_999;
    expect(tokens.verify(token)).not.toBeNull();
    now += 1;
    expect(tokens.verify(token)).toBeNull();
  });

  it("never reach the request log", async () => {
    const { lines, logger } = capturedLogs();
    server = await startTestServer({
      env: { AGENT_API_KEYS: KEY_A, LOG_LEVEL: "info" },
      logger,
    });
    const { runId } = await finishedRun(server, as(KEY_A));
    const { token } = (await server.request("POST", `/runs/${runId}/stream-token`, { headers: as(KEY_A) })).body;
    await (await openSse(`${server.url}/runs/${runId}/events?after=0&token=${encodeURIComponent(token)}`)).ended;
    await fetch(`${server.url}/runs/${runId}/events?token=${encodeURIComponent(token)}x`);
    const log = lines.join("");
    expect(log).toContain(`/runs/${runId}/events?after=0&token=[redacted]`);
    expect(log).not.toContain(token.split(".")[1]);
  });
});
