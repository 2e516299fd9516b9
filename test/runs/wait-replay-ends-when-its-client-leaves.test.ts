/**
 * A `?wait=true` start is a long-lived connection of its key (MAX_STREAMS_PER_KEY), and a start
 * repeated under its Idempotency-Key is answered with the run it started, `?wait=true` waiting
 * for that run's end again. The key's slot is given back when the client's connection closes,
 * but the wait (routes/runs.ts, `ctx.runs.waitForFinish`) was not told: it went on until the run
 * ended, holding its request, the parsed body and its input (up to BODY_LIMIT_BYTES) with it. A
 * run awaiting approval waits up to APPROVAL_TIMEOUT_MS (15 min), so a key repeating one keyed
 * `?wait=true` start and dropping the connection held one more request in the server's memory
 * each time: no run is created (no MAX_RUNS_PER_KEY), and the quota counts none of them.
 *
 * A wait whose client has gone ends (told by the route: src/http/client-gone.ts); the run goes
 * on (a client that merely disconnects never cancels a run).
 */
import http from "node:http";
import { queryObjects } from "node:v8";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withKey } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY = "key-waiter-0123456789abcdef";
const LIMIT = 2;
const ROUNDS = 10;
const INPUT = "write it ".repeat(30_000);

/** Requests (and responses) this process has received and still holds, after a full collection. */
const incoming = () => queryObjects(http.IncomingMessage, { format: "count" }) as number;

/** The keyed start again with `?wait=true`, on its own connection, dropped after `holdMs`. */
async function waitAndLeave(server: TestServer, sessionId: string, holdMs: number): Promise<number> {
  const payload = JSON.stringify({ input: INPUT });
  let status = 0;
  const req = http.request(`${server.url}/sessions/${sessionId}/runs?wait=true`, {
    method: "POST",
    agent: false,
    headers: {
      authorization: `Bearer ${KEY}`,
      "content-type": "application/json",
      "content-length": Buffer.byteLength(payload),
      "idempotency-key": "k1",
    },
  });
  req.on("response", (res) => {
    status = res.statusCode ?? 0;
    res.resume();
  });
  req.on("error", () => {});
  req.end(payload);
  await new Promise((resolve) => setTimeout(resolve, holdMs));
  req.destroy();
  return status;
}

describe("a ?wait=true replay whose client leaves", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY, MAX_STREAMS_PER_KEY: String(LIMIT) } });
  });
  afterAll(() => server.close());

  it("stops waiting: the server holds no more waits than MAX_STREAMS_PER_KEY", async () => {
    const keyed = withKey(server, KEY);
    server.upstream.enqueue({
      toolCalls: [{ id: "call_w", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "hi" }) }],
    });
    const session = (await keyed.request("POST", "/sessions", { body: {} })).body;
    const run = (
      await keyed.request("POST", `/sessions/${session.id}/runs`, {
        body: { input: INPUT },
        headers: { "idempotency-key": "k1" },
      })
    ).body;
    await until(
      async () => (await keyed.request("GET", `/runs/${run.id}`)).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    const before = incoming();
    for (let round = 0; round < ROUNDS; round++) {
      // The key's whole quota of waits at once (each answered nothing: its run awaits approval), then dropped.
      const statuses = await Promise.all(Array.from({ length: LIMIT }, () => waitAndLeave(server, session.id, 300)));
      expect(statuses).toEqual(Array(LIMIT).fill(0));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await keyed.request("GET", `/runs/${run.id}`)).body.status).toBe("awaiting_approval");
    // Before the fix: every dropped wait's request (ROUNDS * LIMIT, each with its 270 KB input) still held.
    expect(incoming() - before).toBeLessThanOrEqual(LIMIT);
  }, 60_000);
});
