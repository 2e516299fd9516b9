/**
 * One key's run took an input of ~1 MB and 4 steered inputs of ~1 MB each, and waits for an
 * approval. The key then resumes its chat stream over and over (`GET /sessions/{id}/chat/stream`,
 * what `useChat` sends on a page load): each answer is the same few hundred bytes, since the UI
 * message shows no user message. Each resume read every event of the run, the user messages'
 * 5 MB with them, and parsed them to drop them; now their stored events are not read.
 */
import { afterEach, describe, expect, it } from "vitest";
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

describe("a key resuming the chat stream of its run of 5 MB of user messages", () => {
  it("reads none of them", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ wrapStore: reads.wrap, env: { AGENT_API_KEYS: A } });
    server = s;
    s.upstream.enqueue(call("call_1"), call("call_2"));
    const session = (await s.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const runs = `/sessions/${session.id}/runs`;
    const run = (await s.request("POST", runs, { body: { input: "w".padEnd(1_000_000, "x") }, headers: auth })).body;
    const pending = async () => (await s.request("GET", `/runs/${run.id}/approvals`, { headers: auth })).body.items;
    await until(pending, (items) => items.length === 1, "the first approval request");
    // A steer is answered once the run takes its input: after the approval.
    const steers = [0, 1, 2, 3].map((i) =>
      s.request("POST", runs, { body: { input: `${i}`.padEnd(1_000_000, "y"), ifBusy: "steer" }, headers: auth }),
    );
    // Stored before the approval, so that the run takes them before its next request (after a
    // fixed 1 s, a loaded machine could still be storing one, left then for a turn never reached).
    await until(
      () => s.ctx.store.inputs.pending(run.id),
      (inputs) => inputs.length === steers.length,
      "the four steered inputs to be stored",
    );
    await s.request("POST", `/runs/${run.id}/approvals/call_1`, { body: { decision: "approve" }, headers: auth });
    expect((await Promise.all(steers)).map((r) => r.status)).toEqual([202, 202, 202, 202]);
    await until(pending, (items) => items[0]?.toolCallId === "call_2", "the second approval request");
    const messages = await s.ctx.store.messages.ofRun(session.id, run.id);
    expect(messages.filter((m) => m.role === "user")).toHaveLength(5);
    // What a chat stream reads of them: none.
    const read = await s.ctx.store.events.afterWithin(run.id, 0, {
      limit: 500,
      bytes: 1 << 20,
      withoutUserMessages: true,
    });
    expect(read.events.filter((e) => e.type === "message" && e.data.includes('"role":"user"'))).toEqual([]);
    expect(read.events.filter((e) => e.type === "message")).toHaveLength(3);

    reads.counting = true;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < 30; i++) {
      const answer = await s.request("GET", `/sessions/${session.id}/chat/stream`, { headers: auth });
      expect(answer.status).toBe(200);
    }
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    console.log(`${Math.round(reads.bytes / 1000)} KB read from the store`);
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(`30 chat resumes of a run of 5 MB of user messages: ${Math.round(cpuMs)} ms of CPU`);
    // The stream's own events (a few KB each resume), not the 5 MB of user messages (150 MB read before).
    expect(reads.bytes).toBeLessThan(30 * 50_000);
    await s.request("DELETE", `/runs/${run.id}`, { headers: auth });
  }, 60_000);
});
