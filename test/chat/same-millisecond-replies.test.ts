/**
 * Two replies of one run proposed within the same millisecond (a client deciding at once on
 * localhost, a model answering at once; here the clock held still): a chat decision repeated
 * after the second reply is answered as the first was, from the first call's approval request
 * on. Its continuation takes up the stream with the calls of the first reply alone awaiting a
 * result; taking the second reply's call for one of them left out the first reply's finish-step
 * and the second's start-step.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { UiMessageProjection } from "../../src/chat/ui-chunks.js";
import type { RunEvent } from "../../src/domain/run-events.js";
import type { BackendName } from "../helpers/store-backends.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const write = (id: string) => ({
  toolCalls: [{ id, name: "write_file", arguments: JSON.stringify({ path: `${id}.txt`, content: id }) }],
});
const frames = (body: string) => body.split("\n").filter((line) => line.startsWith("data: "));

let server: TestServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await server?.close();
  server = undefined;
});

describe.each<BackendName>(["sqlite", "postgres"])("replies of one run in one millisecond, on %s", (backend) => {
  it("a repeated chat decision is continued as the first was, from the first reply alone", async () => {
    const s = await startTestServer({ backend });
    server = s;
    // Date alone is held still: timers and sockets run as ever.
    vi.useFakeTimers({ toFake: ["Date"], now: new Date("2026-01-01T00:00:00.000Z") });
    s.upstream.enqueue(write("call_1"), write("call_2"), { text: "done" });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const chat = `/sessions/${session.id}/chat`;
    const user = { role: "user", parts: [{ type: "text", text: "write" }] };
    expect((await s.request("POST", chat, { body: { messages: [user] } })).status).toBe(200);
    const runId = (await s.request("GET", `/sessions/${session.id}`)).body.activeRunId as string;
    const pending = async () => (await s.request("GET", `/runs/${runId}/approvals`)).body.items;
    const decide = () =>
      s.request("POST", chat, {
        body: {
          messages: [
            user,
            {
              role: "assistant",
              parts: [
                { type: "dynamic-tool", state: "approval-responded", approval: { id: "call_1", approved: true } },
              ],
            },
          ],
        },
      });
    const first = await decide();
    expect(first.status).toBe(200);
    await until(pending, (items) => items[0]?.toolCallId === "call_2", "the second approval request");
    const [one, two] = await Promise.all(["call_1", "call_2"].map((id) => s.ctx.store.toolCalls.status(runId, id)));
    expect(two?.proposedAt).toBe(one?.proposedAt);

    // What a stream fed every event of the run sends after the first request, up to the second.
    const all = (await s.ctx.store.events.after(runId, 0)).map((e) => JSON.parse(e.data) as RunEvent);
    const [from, to] = all.filter((e) => e.type === "approval.requested").map((e) => e.seq) as [number, number];
    const projection = new UiMessageProjection();
    const expected = all.flatMap((event) => {
      const chunks = projection.next(event);
      if (event.seq <= from) return chunks.filter((chunk) => chunk.type === "start");
      return event.seq <= to ? chunks : [];
    });
    expect(expected.map((chunk) => chunk.type)).toContain("finish-step");
    const continuation = [
      ...[...expected, { type: "finish", finishReason: "tool-calls" }].map((chunk) => `data: ${JSON.stringify(chunk)}`),
      "data: [DONE]",
    ];
    expect(frames(first.body as string)).toEqual(continuation);

    const again = await decide();
    expect(again.status).toBe(200);
    expect(frames(again.body as string)).toEqual(continuation);
    await s.request("DELETE", `/runs/${runId}`);
  });
});
