/**
 * A run waiting for an approval holds 32 steered inputs of ~1 MB (`ifBusy: "steer"`, the most a
 * run keeps), and is cancelled. Each steer then found its run ended without its input, and each
 * one whose start was refused queued its input as a run of its own: to find that input, it read
 * every input left on the server whole (`inputs.orphaned`), and each queued start read the
 * session's whole queue. 32 steers read ~2 GB (quadratic), on the event loop. Now each reads
 * only its own input, by id.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MAX_PENDING_INPUTS } from "../../src/runs/steer.js";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a cancel of a run holding 32 steered inputs of 1 MB", () => {
  it("reads each left input once, not all of them for each", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ env: { AGENT_API_KEYS: A }, wrapStore: reads.wrap });
    server = s;
    s.upstream.fallback = () => ({ text: "ok" });
    s.upstream.enqueue({
      toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
    });
    const session = (await s.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const runs = `/sessions/${session.id}/runs`;
    const run = (await s.request("POST", runs, { body: { input: "w" }, headers: auth })).body;
    await until(
      async () => (await s.request("GET", `/runs/${run.id}`, { headers: auth })).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    const steers = Array.from({ length: MAX_PENDING_INPUTS }, (_, i) =>
      s.request("POST", runs, { body: { input: `${i}`.padEnd(1_000_000, "s"), ifBusy: "steer" }, headers: auth }),
    );
    await until(
      async () => (await s.ctx.store.inputs.pending(run.id)).length,
      (n) => n === MAX_PENDING_INPUTS,
      "the steered inputs to be stored",
    );

    reads.counting = true;
    expect((await s.request("DELETE", `/runs/${run.id}`, { headers: auth })).status).toBe(202);
    await finishedRun({ request: (method, path) => s.request(method, path, { headers: auth }) }, run.id);
    const answers = await Promise.all(steers);
    reads.counting = false;
    // Every input is answered with a run of its own (started, or queued behind another).
    expect(answers.map((a) => a.status).every((st) => st === 201 || st === 202)).toBe(true);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(MAX_PENDING_INPUTS);
    const byMethod = new Map<string, number>();
    for (const call of reads.calls) {
      const [name, size] = call.split(" ");
      byMethod.set(name as string, (byMethod.get(name as string) ?? 0) + Number(size));
    }
    const top = [...byMethod].sort((a, b) => b[1] - a[1]).slice(0, 6);
    console.log(`a cancel and its steers' answers: ${Math.round(reads.bytes / 1e6)} MB read`, top);
    expect(reads.bytes, JSON.stringify(top)).toBeLessThan(64_000_000);
  }, 120_000);
});
