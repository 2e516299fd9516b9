/**
 * One key's run took 4 steered inputs of ~1 MB and waits for an approval when the server
 * restarts (with ON_RESTART=resume, the default). Recovery resumes the run from its history,
 * which it reads once; it also read every message of the run, whole, only to learn whether the
 * run had committed any (its input is committed first: a run without one starts over with it).
 * That is now an existence query.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };
const call = (id: string) => ({
  toolCalls: [{ id, name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
});

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a restart resuming a key's run of 4 MB of user messages", () => {
  it("reads the run's messages once, for its history", async () => {
    const env = { AGENT_API_KEYS: A };
    const upstream = await startFakeUpstream();
    const first = await startTestServer({ env, upstream });
    server = first;
    upstream.enqueue(call("call_1"), call("call_2"));
    const session = (await first.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const runs = `/sessions/${session.id}/runs`;
    const run = (await first.request("POST", runs, { body: { input: "go" }, headers: auth })).body;
    const pending = async (s: TestServer) =>
      (await s.request("GET", `/runs/${run.id}/approvals`, { headers: auth })).body.items;
    await until(
      () => pending(first),
      (items) => items.length === 1,
      "the first approval request",
    );
    const steers = [0, 1, 2, 3].map((i) =>
      first.request("POST", runs, { body: { input: `${i}`.padEnd(1_000_000, "y"), ifBusy: "steer" }, headers: auth }),
    );
    await until(
      async () => (await first.ctx.store.inputs.pending(run.id)).length,
      (n) => n === 4,
      "the steered inputs to be stored",
    );
    await first.request("POST", `/runs/${run.id}/approvals/call_1`, { body: { decision: "approve" }, headers: auth });
    expect((await Promise.all(steers)).map((r) => r.status)).toEqual([202, 202, 202, 202]);
    await until(
      () => pending(first),
      (items) => items[0]?.toolCallId === "call_2",
      "the second approval request",
    );
    const messages = await first.ctx.store.messages.ofRun(session.id, run.id);
    const messageBytes = messages.reduce((sum, m) => sum + m.content.length, 0);
    expect(messageBytes).toBeGreaterThan(4_000_000);
    await first.close({ keepDir: true, resume: true });
    server = undefined;

    const reads = new ReadBytes();
    reads.counting = true;
    const second = await startTestServer({ env, dir: first.dir, upstream, wrapStore: reads.wrap });
    server = second;
    await until(
      () => pending(second),
      (items) => items[0]?.toolCallId === "call_2",
      "the resumed approval request",
    );
    reads.counting = false;
    console.log(
      `a restart resuming a run of ${Math.round(messageBytes / 1000)} KB of messages: ` +
        `${Math.round(reads.bytes / 1000)} KB read from the store`,
    );
    expect(reads.bytes).toBeLessThan(1.5 * messageBytes);
    await second.request("DELETE", `/runs/${run.id}`, { headers: auth });
    await upstream.close();
  }, 60_000);
});
