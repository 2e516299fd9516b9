/**
 * An `ifBusy: "steer"` start waits until the run takes its input, and that wait is a long-lived
 * connection of its key: MAX_STREAMS_PER_KEY bounds how many one key holds ("its wait counts
 * under MAX_STREAMS_PER_KEY"; README, Bounded steering and Long-lived connections per key).
 * The slot is given back as soon as the client's connection closes, but the wait itself
 * (src/runs/steer.ts, steerActive) was not told: it went on in the server, holding the request
 * and its input, a hub subscription on the run (counted as one of its watchers) and a
 * database poll every 250 ms, until the run took the input or ended (an approval may wait
 * 15 minutes). So a key that opened steers and dropped them held as many waits as its runs take
 * inputs (32 each, times MAX_RUNS_PER_KEY runs), not MAX_STREAMS_PER_KEY.
 *
 * A steer whose client has gone stops waiting (told by the route: src/http/client-gone.ts); its
 * input stays stored for the run, which takes it (or, ending without it, queues it as a run of
 * its own), as the README says.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAwaitingApproval, withKey } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY = "key-steerer-0123456789abcdef";
const LIMIT = 2;
const ROUNDS = 4;

/** The contents of the session's user messages, in order (every page). */
async function userMessagesOf(server: TestServer, sessionId: string): Promise<string[]> {
  const contents: string[] = [];
  for (let cursor: string | null = ""; cursor !== null; ) {
    const query: string = cursor === "" ? "" : `?cursor=${encodeURIComponent(cursor)}`;
    const page = (await server.request("GET", `/sessions/${sessionId}/messages${query}`)).body;
    for (const m of page.items) if (m.role === "user") contents.push(m.content);
    cursor = page.nextCursor;
  }
  return contents;
}

/** A steer on its own connection, left open until `destroy`. */
function openSteer(
  server: TestServer,
  sessionId: string,
  input: string,
): { destroy: () => void; answered: Promise<number> } {
  const payload = JSON.stringify({ input, ifBusy: "steer" });
  const req = http.request(`${server.url}/sessions/${sessionId}/runs`, {
    method: "POST",
    agent: false,
    headers: {
      authorization: `Bearer ${KEY}`,
      "content-type": "application/json",
      "content-length": Buffer.byteLength(payload),
    },
  });
  const answered = new Promise<number>((resolve) => {
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
  });
  req.end(payload);
  return { destroy: () => req.destroy(), answered };
}

describe("a steer whose client leaves", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY, MAX_STREAMS_PER_KEY: String(LIMIT) } });
  });
  afterAll(() => server.close());

  it("stops waiting: a key holds no more steer waits than MAX_STREAMS_PER_KEY; the run still takes their input", async () => {
    const keyed = withKey(server, KEY);
    const { sessionId, runId } = await runAwaitingApproval(keyed);
    const waits = () => server.ctx.hub.watcherCount(runId);
    expect(waits()).toBe(0);
    const inputs: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Each round the key holds LIMIT steers at once (its whole quota), then drops them.
      const before = waits();
      const roundInputs = Array.from({ length: LIMIT }, (_, i) => `more ${round}.${i} `.repeat(20_000));
      inputs.push(...roundInputs);
      const steers = roundInputs.map((input) => openSteer(server, sessionId, input));
      // Both are waiting (each subscribed to the run) before they are dropped: none was refused.
      await until(waits, (n) => n >= before + LIMIT, "the round's steers to wait");
      for (const steer of steers) steer.destroy();
      // Told their clients left, the waits end (the key's slots were given back by the same
      // closes). Before the fix they went on, every steer ever dropped still waiting in the
      // server (ROUNDS * LIMIT of them, each holding its ~200 KB input and polling the
      // database 4 times a second), and this timed out in the first round.
      await until(waits, (n) => n <= before, "the dropped steers to stop waiting");
    }
    // Every client has gone; the run still awaits its approval, with every dropped steer's
    // input stored for it (README: a steer whose client left still joins its run).
    expect((await keyed.request("GET", `/runs/${runId}`)).body.status).toBe("awaiting_approval");
    expect(waits()).toBe(0);
    server.upstream.enqueue({ text: "done" });
    const decided = await keyed.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } });
    expect(decided.status).toBe(200);
    const run = await until(
      async () => (await keyed.request("GET", `/runs/${runId}`)).body,
      (r) => r.status === "finished",
      "the run to finish",
    );
    expect(run.stopReason).toBe("complete");
    // The run's own input first, then the steers' (those of one round in either order).
    const users = await userMessagesOf(keyed, sessionId);
    expect(users[0]).toBe("write");
    expect(users.slice(1).sort()).toEqual(inputs.sort());
  }, 60_000);
});
