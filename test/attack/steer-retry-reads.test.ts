/**
 * One key fills its own run (waiting for an approval, so it takes no input for a while) with
 * the most steered inputs a run keeps, most of ~1 MB, each under its own Idempotency-Key, then
 * sends the short one's key again and again with other input. A steer whose key's input is
 * still pending compares its input with the stored one: that read every input pending on the
 * run, whole (31 MB for a request of 40 bytes), on the event loop, before answering 409. Now
 * the database compares that one input.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_PENDING_INPUTS } from "../../src/runs/steer.js";
import { postOnOwnConnection } from "../helpers/own-connection-post.js";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };
const post = (url: string, payload: string, key: string, timeoutMs: number) =>
  postOnOwnConnection(url, { payload, headers: { ...auth, "idempotency-key": key }, timeoutMs });

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a key retrying a steer of its own, while its run holds the most inputs it keeps", () => {
  it("compares the retried input alone: the event loop is not held by reading every pending input", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ wrapStore: reads.wrap, env: { AGENT_API_KEYS: A } });
    server = s;
    s.upstream.enqueue({
      toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
    });
    const session = (await s.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const run = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "w" }, headers: auth })).body;
    await until(
      async () => (await s.request("GET", `/runs/${run.id}`, { headers: auth })).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    const url = `${s.url}/sessions/${session.id}/runs`;
    const steer = (input: string) => JSON.stringify({ input, ifBusy: "steer" });
    // The run's inputs: a short one, then 1 MB each; each steer stays open, waiting for the run
    // to take its input (given up here: the input stays stored).
    const stored = Array.from({ length: MAX_PENDING_INPUTS }, (_, i) =>
      post(url, steer(i === 0 ? "first" : `${i}`.padEnd(1_000_000, "x")), `k${i}`, 2000),
    );
    await until(
      async () => (await s.ctx.store.inputs.pending(run.id)).length,
      (n) => n === MAX_PENDING_INPUTS,
      "every input to be stored",
    );
    await Promise.all(stored);
    // The short steer's key, retried with other input: refused each time (409), after comparing
    // with the stored input, which read all 32 MB pending on the run.
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    reads.counting = true;
    const cpu0 = process.cpuUsage();
    const answers = await Promise.all(Array.from({ length: 40 }, () => post(url, steer("other"), "k0", 5000)));
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    console.log(`${Math.round(reads.bytes / 1000)} KB read from the store`);
    delay.disable();
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(
      `40 retries: ${Math.round(cpuMs)} ms of CPU, event loop delay max ${Math.round(delay.max / 1e6)} ms, ` +
        `answers ${[...new Set(answers)].join(",")}`,
    );
    // The one input compared in the database, not the 32 MB pending on the run (1.3 GB read before).
    expect(reads.bytes).toBeLessThan(40 * 10_000);
    expect(answers).toEqual(Array(40).fill(409));
    expect((await s.ctx.store.inputs.pending(run.id)).length).toBe(MAX_PENDING_INPUTS);
    await s.request("DELETE", `/runs/${run.id}`, { headers: auth });
  }, 60_000);
});
