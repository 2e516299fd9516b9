/**
 * One key starts a run of a ~1 MB input under an Idempotency-Key, and steers ~1 MB more into it
 * under a second key; the run takes that input as a user message and finishes. The key then
 * sends each key again and again with other input of a few bytes: each is refused (409
 * IDEMPOTENCY_KEY_REUSED), an answer of a few hundred bytes. Each refusal read the stored 1 MB
 * (the run's row, or the user message the steer became) to compare it with the request's input;
 * now the database compares them and the refusal reads neither.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };
const REPEATS = 60;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a key reusing its Idempotency-Keys with other input", () => {
  it("is refused without reading the stored input of a run or of a steer", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ env: { AGENT_API_KEYS: A }, wrapStore: reads.wrap });
    server = s;
    s.upstream.enqueue(
      { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }] },
      { text: "done" },
    );
    const session = (await s.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const runs = `/sessions/${session.id}/runs`;
    const start = (input: string) =>
      s.request("POST", runs, { body: { input }, headers: { ...auth, "idempotency-key": "run-key" } });
    const steer = (input: string) =>
      s.request("POST", runs, {
        body: { input, ifBusy: "steer" },
        headers: { ...auth, "idempotency-key": "steer-key" },
      });
    const run = (await start("w".padEnd(1_000_000, "x"))).body;
    await until(
      async () => (await s.request("GET", `/runs/${run.id}`, { headers: auth })).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    // Answered once the run takes the input: after the approval.
    const steered = steer("s".padEnd(1_000_000, "y"));
    await until(
      async () => (await s.ctx.store.inputs.pending(run.id)).length,
      (n) => n === 1,
      "the steered input to be stored",
    );
    await s.request("POST", `/runs/${run.id}/approvals/call_w`, { body: { decision: "approve" }, headers: auth });
    expect((await steered).status).toBe(202);
    await finishedRun({ request: (method, path) => s.request(method, path, { headers: auth }) }, run.id);
    const users = (await s.ctx.store.messages.ofRun(session.id, run.id)).filter((m) => m.role === "user");
    expect(users.map((m) => m.content.length)).toEqual([1_000_000, 1_000_000]);

    reads.counting = true;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < REPEATS; i++) {
      const [started, again] = await Promise.all([start(`other ${i}`), steer(`other ${i}`)]);
      expect([started.status, again.status]).toEqual([409, 409]);
      expect(started.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
      expect(again.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    }
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(
      `${REPEATS} reused run keys and ${REPEATS} reused steer keys: ${Math.round(cpuMs)} ms of CPU, ` +
        `${Math.round(reads.bytes / 1000)} KB read from the store`,
    );
    // Each refusal reads a few hundred bytes of the store (it read the stored 1 MB).
    expect(reads.bytes).toBeLessThan(2 * REPEATS * 2000);
    expect(cpuMs).toBeLessThan(1500);
  }, 60_000);
});
