/**
 * One key starts a planning run with a short input under an Idempotency-Key, steers 4 inputs of
 * ~1 MB into it (taken as user messages) and leaves it waiting for an approval. It then sends
 * its start again and again, the same request of a few bytes under the same key, each answered
 * with the run (a few hundred bytes), and at last cancels the run. A planning run's view carries
 * its plan, and each of these views (the cancel's answer too) derived it from all the run's
 * messages, read whole (4 MB); now they read only the run's last plan event, as
 * `GET /runs/{id}` does.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };
const REPEATS = 30;
const call = (id: string) => ({
  toolCalls: [{ id, name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
});

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a key repeating the keyed start of its planning run of 4 MB of user messages, then cancelling it", () => {
  it("does not read the run's messages for its plan each time", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ env: { AGENT_API_KEYS: A }, wrapStore: reads.wrap });
    server = s;
    s.upstream.enqueue(call("call_1"), call("call_2"));
    const session = (await s.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const runs = `/sessions/${session.id}/runs`;
    const start = () =>
      s.request("POST", runs, {
        body: { input: "plan", planning: true },
        headers: { ...auth, "idempotency-key": "plan-key" },
      });
    const run = (await start()).body;
    const pending = async () => (await s.request("GET", `/runs/${run.id}/approvals`, { headers: auth })).body.items;
    await until(pending, (items) => items.length === 1, "the first approval request");
    const steers = [0, 1, 2, 3].map((i) =>
      s.request("POST", runs, { body: { input: `${i}`.padEnd(1_000_000, "y"), ifBusy: "steer" }, headers: auth }),
    );
    await until(
      async () => (await s.ctx.store.inputs.pending(run.id)).length,
      (n) => n === 4,
      "the steered inputs to be stored",
    );
    await s.request("POST", `/runs/${run.id}/approvals/call_1`, { body: { decision: "approve" }, headers: auth });
    expect((await Promise.all(steers)).map((r) => r.status)).toEqual([202, 202, 202, 202]);
    await until(pending, (items) => items[0]?.toolCallId === "call_2", "the second approval request");
    const users = (await s.ctx.store.messages.ofRun(session.id, run.id)).filter((m) => m.role === "user");
    expect(users).toHaveLength(5);
    const view = (await s.request("GET", `/runs/${run.id}`, { headers: auth })).body;

    reads.counting = true;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < REPEATS; i++) {
      const again = await start();
      // Answered as the first was (201), with the same run: nothing started.
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      // The same view, but for the run's duration, counted up to now while it executes here.
      expect({ ...again.body, stats: { ...again.body.stats, durationMs: 0 } }).toEqual({
        ...view,
        stats: { ...view.stats, durationMs: 0 },
      });
      expect(again.body.stats.durationMs).toBeGreaterThanOrEqual(view.stats.durationMs);
    }
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(
      `${REPEATS} repeated starts of a planning run of 4 MB of user messages: ` +
        `${Math.round(cpuMs)} ms of CPU, ${Math.round(reads.bytes / 1000)} KB read from the store`,
    );
    // A few KB each (the run's row and what the plan gained since it was last shown), not 4 MB.
    expect(reads.bytes).toBeLessThan(REPEATS * 20_000);
    expect(cpuMs).toBeLessThan(1500);

    // The cancel's answer takes the plan kept here too: what is read is the run's end, which
    // derives the final plan from the run's messages once.
    reads.bytes = 0;
    reads.counting = true;
    const cancelled = await s.request("DELETE", `/runs/${run.id}`, { headers: auth });
    expect(cancelled.status).toBe(202);
    // Its duration has moved on with the run's writes since (stored with each of them).
    const { durationMs } = cancelled.body.stats;
    expect(durationMs).toBeGreaterThanOrEqual(view.stats.durationMs);
    expect(cancelled.body).toEqual({ ...view, status: "cancelling", stats: { ...view.stats, durationMs } });
    await finishedRun({ request: (method, path) => s.request(method, path, { headers: auth }) }, run.id);
    reads.counting = false;
    const messageBytes = users.reduce((sum, m) => sum + m.content.length, 0);
    console.log(`a cancel and the run's end: ${Math.round(reads.bytes / 1000)} KB read from the store`);
    expect(reads.bytes).toBeLessThan(1.5 * messageBytes);
  }, 60_000);
});
