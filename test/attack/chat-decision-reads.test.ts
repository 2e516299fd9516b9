/**
 * One key's run proposed a call with an input of ~500 KB, which the key approved through its
 * chat, and now waits for the approval of a second, small call. The key then posts the same
 * decision on the first call again and again (`POST /sessions/{id}/chat`, a body of a few hundred
 * bytes, a repeated decision being answered as the first was), each answered with the same
 * continuation of a few KB: from the first call's approval request to the second's. Each
 * continuation read every approval request of the run whole (the first holds the 500 KB input)
 * to find where to continue from, then every event of the run from the first (the reply holding
 * the call, and its approval request again) only to drop those before that point; now neither
 * is read.
 */
import { afterEach, describe, expect, it } from "vitest";
import { UiMessageProjection } from "../../src/chat/ui-chunks.js";
import type { RunEvent } from "../../src/domain/run-events.js";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };
const REPEATS = 30;
const write = (id: string, content: string) => ({
  toolCalls: [{ id, name: "write_file", arguments: JSON.stringify({ path: `${id}.txt`, content }) }],
});

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a key repeating a chat decision on a call of a 500 KB input", () => {
  it("is answered the same continuation without reading the call's input", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ env: { AGENT_API_KEYS: A }, wrapStore: reads.wrap });
    server = s;
    s.upstream.enqueue(write("call_big", "b".repeat(500_000)), write("call_2", "small"));
    const session = (await s.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const chat = `/sessions/${session.id}/chat`;
    const started = await s.request("POST", chat, {
      body: { messages: [{ role: "user", parts: [{ type: "text", text: "write" }] }] },
      headers: auth,
    });
    expect(started.status).toBe(200);
    const runId = (await s.request("GET", `/sessions/${session.id}`, { headers: auth })).body.activeRunId;
    const pending = async () => (await s.request("GET", `/runs/${runId}/approvals`, { headers: auth })).body.items;
    expect((await pending()).map((a: { toolCallId: string }) => a.toolCallId)).toEqual(["call_big"]);
    const decide = () =>
      s.request("POST", chat, {
        body: {
          messages: [
            { role: "user", parts: [{ type: "text", text: "write" }] },
            {
              role: "assistant",
              parts: [
                { type: "dynamic-tool", state: "approval-responded", approval: { id: "call_big", approved: true } },
              ],
            },
          ],
        },
        headers: auth,
      });
    const first = await decide();
    expect(first.status).toBe(200);
    await until(pending, (items) => items[0]?.toolCallId === "call_2", "the second approval request");
    // The continuation is what a stream fed every event of the run from the first sends after the
    // first call's approval request, up to the second's.
    const all = (await s.ctx.store.events.after(runId, 0)).map((e) => JSON.parse(e.data) as RunEvent);
    const requested = all.filter((e) => e.type === "approval.requested").map((e) => e.seq);
    const projection = new UiMessageProjection();
    const expected = all.flatMap((event) => {
      const chunks = projection.next(event);
      if (event.seq <= (requested[0] as number)) return chunks.filter((chunk) => chunk.type === "start");
      return event.seq <= (requested[1] as number) ? chunks : [];
    });
    const frames = (first.body as string).split("\n").filter((line) => line.startsWith("data: "));
    expect(frames).toEqual([
      ...[...expected, { type: "finish", finishReason: "tool-calls" }].map((chunk) => `data: ${JSON.stringify(chunk)}`),
      "data: [DONE]",
    ]);
    for (const seen of ['"tool-approval-response"', '"tool-output-available"', '"toolCallId":"call_2"']) {
      expect(frames.some((frame) => frame.includes(seen))).toBe(true);
    }
    expect(first.body).not.toContain("bbbb");

    reads.counting = true;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < REPEATS; i++) {
      const again = await decide();
      expect(again.status).toBe(200);
      expect(again.body).toBe(first.body);
    }
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(
      `${REPEATS} repeated chat decisions on a call of a 500 KB input: ${Math.round(cpuMs)} ms of CPU, ` +
        `${Math.round(reads.bytes / 1000)} KB read from the store`,
    );
    // A few KB each (the continuation's own events), not the call's 500 KB.
    expect(reads.bytes).toBeLessThan(REPEATS * 20_000);
    expect(cpuMs).toBeLessThan(1500);
    await s.request("DELETE", `/runs/${runId}`, { headers: auth });
  }, 60_000);
});
