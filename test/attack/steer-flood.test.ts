/**
 * One key floods its own run (waiting for an approval, so it takes no input for a while) with
 * `ifBusy: "steer"` requests. Each waiting steer looked for its input every 250 ms by reading
 * every input pending on the run, whole: n steers of s bytes read n² × s bytes per 250 ms, on
 * the event loop (SQLite answers synchronously), and nothing bounded n. 40 steers of 200 KB
 * took 35 s to be stored, and another key's `GET /sessions` then waited over a minute.
 * Now a run keeps at most MAX_PENDING_INPUTS inputs (one more is 429 TOO_MANY_INPUTS, nothing
 * stored), a waiting steer asks only whether its own input is still pending, and a steer's wait
 * is a long-lived connection of its key (MAX_STREAMS_PER_KEY), like `?wait=true`.
 */
import http from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_PENDING_INPUTS } from "../../src/runs/steer.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const B = "key-bystander-0123456789abcdef";
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

interface Answer {
  status: number;
  body: string;
}

/** A POST on its own connection; resolves with its answer (or the error's code). */
function post(url: string, key: string, payload: string, timeoutMs = 60_000): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request(url, {
      method: "POST",
      agent: false,
      timeout: timeoutMs,
      headers: { ...auth(key), "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
    });
    req.on("timeout", () => req.destroy(new Error("TIMEOUT")));
    req.on("error", (err) => resolve({ status: 0, body: err.message }));
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.end(payload);
  });
}

/** GET on its own connection: how long it took, or Infinity when it did not answer within `timeoutMs`. */
function timedGet(url: string, key: string, timeoutMs: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.get(url, { headers: auth(key), agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on("end", () => resolve(performance.now() - started));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(Number.POSITIVE_INFINITY));
  });
}

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A session of key A whose run waits for the approval of a write_file call. */
async function awaitingRun(s: TestServer) {
  s.upstream.enqueue({
    toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
  });
  const session = (await s.request("POST", "/sessions", { body: {}, headers: auth(A) })).body;
  const run = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "w" }, headers: auth(A) }))
    .body;
  await until(
    async () => (await s.request("GET", `/runs/${run.id}`, { headers: auth(A) })).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  return { sessionId: session.id as string, runId: run.id as string };
}

describe("a key steering its own run over and over", () => {
  it("keeps at most MAX_PENDING_INPUTS inputs on a run, and another key is served meanwhile", async () => {
    const s = await startTestServer({ env: { AGENT_API_KEYS: `${A},${B}` } });
    server = s;
    const { sessionId, runId } = await awaitingRun(s);
    const payload = JSON.stringify({ input: "x".repeat(200_000), ifBusy: "steer" });
    const attempts = MAX_PENDING_INPUTS + 16;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    // Every steer at once, each on its own connection, held open while it waits.
    const steers = Array.from({ length: attempts }, () =>
      post(`${s.url}/sessions/${sessionId}/runs`, A, payload, 20_000),
    );
    const answered: Answer[] = [];
    for (const steer of steers) void steer.then((answer) => answered.push(answer));
    // The steers are stored (or refused) and wait; another key asks for its sessions meanwhile.
    // Waited for until all are (10 s), not for a fixed 2 s that a loaded machine could need more than.
    await until(
      async () => ({ pending: (await s.ctx.store.inputs.pending(runId)).length, answered: answered.length }),
      (now) => now.pending + now.answered === attempts,
      "every steer to be stored or refused",
    );
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) latencies.push(await timedGet(`${s.url}/sessions`, B, 5000));
    delay.disable();
    const pending = (await s.ctx.store.inputs.pending(runId)).length;
    console.log(
      `steers: ${attempts}, pending: ${pending}, answered: ${answered.map((a) => a.status).join(",")}, ` +
        `B's latencies (ms): ${latencies.map(Math.round).join(",")}, loop delay max: ${Math.round(delay.max / 1e6)} ms`,
    );
    expect(pending).toBe(MAX_PENDING_INPUTS);
    expect(answered).toHaveLength(attempts - MAX_PENDING_INPUTS);
    for (const answer of answered) {
      expect(answer.status).toBe(429);
      expect(JSON.parse(answer.body).error).toMatchObject({ code: "TOO_MANY_INPUTS", details: { limit: 32 } });
    }
    expect(Math.max(...latencies)).toBeLessThan(2500);
    expect(delay.max / 1e6).toBeLessThan(1500);
    // The approval given, the run takes every stored input, and each waiting steer is answered.
    const call = (await s.request("GET", `/runs/${runId}/approvals`, { headers: auth(A) })).body.items[0];
    s.upstream.fallback = () => ({ text: "done" });
    await s.request("POST", `/runs/${runId}/approvals/${call.toolCallId}`, {
      body: { decision: "approve" },
      headers: auth(A),
    });
    const waited = (await Promise.all(steers)).filter((a) => a.status !== 429);
    expect(waited.map((a) => a.status)).toEqual(Array(MAX_PENDING_INPUTS).fill(202));
  }, 60_000);

  it("counts a steer's wait among the key's long-lived connections (MAX_STREAMS_PER_KEY)", async () => {
    const s = await startTestServer({ env: { AGENT_API_KEYS: `${A},${B}`, MAX_STREAMS_PER_KEY: "3" } });
    server = s;
    const { sessionId, runId } = await awaitingRun(s);
    const payload = JSON.stringify({ input: "more", ifBusy: "steer" });
    const held = Array.from({ length: 3 }, () => post(`${s.url}/sessions/${sessionId}/runs`, A, payload));
    await until(
      () => s.ctx.store.inputs.pending(runId),
      (p) => p.length === 3,
      "the three inputs to be stored",
    );
    const fourth = await post(`${s.url}/sessions/${sessionId}/runs`, A, payload, 5000);
    expect(fourth.status).toBe(429);
    expect(JSON.parse(fourth.body).error.code).toBe("TOO_MANY_STREAMS");
    expect(await s.ctx.store.inputs.pending(runId)).toHaveLength(3);
    // Another key's waits are its own.
    expect(await timedGet(`${s.url}/sessions`, B, 3000)).toBeLessThan(1000);
    await s.request("DELETE", `/runs/${runId}`, { headers: auth(A) });
    await Promise.all(held);
  }, 30_000);
});
