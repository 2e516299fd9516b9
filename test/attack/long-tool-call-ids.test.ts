import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_ID_LENGTH } from "../../src/agent/unique-tool-call-ids.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** Tool-call ids of 200,000 characters, each well-formed (URL-safe characters only). */
const LONG_READ_ID = `call_${"r".repeat(200_000)}`;
const LONG_WRITE_ID = `toolu_${"w".repeat(200_000)}`;
/** A piece only the long ids hold. */
const PIECES = ["r".repeat(1_000), "w".repeat(1_000)];
const holds = (text: string) => PIECES.some((piece) => text.includes(piece));

describe("a model choosing tool-call ids of any length (a malicious upstream)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("a call whose id is over MAX_ID_LENGTH runs under a fresh id; the long id is stored, sent and echoed nowhere", async () => {
    // The id is repeated in every event of its call (tool.started, the result message, an
    // approval request), in the ledger's key, in the approval URL and in every later request's
    // history: a long one would be copied into each. Such an id is replaced (withUniqueIds)
    // before anything of the reply is committed, as an empty one is, and the reply runs as usual.
    // Raising MAX_ID_LENGTH past the ids' length makes this test fail.
    server.upstream.enqueue(
      {
        toolCalls: [
          { id: LONG_READ_ID, name: "read_file", arguments: JSON.stringify({ path: "a.txt" }) },
          { id: LONG_WRITE_ID, name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "x" }) },
        ],
      },
      { text: "done" },
    );
    const session = (await server.request("POST", "/sessions", { body: { approval: { default: "allow" } } })).body as {
      id: string;
    };
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
    const run = waited.body.run as { id: string; stopReason: string };
    expect(run.stopReason).toBe("complete");

    const messages = await server.ctx.store.messages.ofRun(session.id, run.id);
    const assistant = messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
    const ids = assistant?.role === "assistant" ? (assistant.toolCalls ?? []).map((call) => call.id) : [];
    expect(ids).toEqual(["call-2", "call-3"]);
    expect(ids.every((id) => id.length <= MAX_ID_LENGTH)).toBe(true);
    const results = messages.filter((m) => m.role === "tool");
    expect(results.map((m) => (m.role === "tool" ? [m.toolCallId, m.metadata.errorCode] : null))).toEqual([
      ["call-2", "NOT_FOUND"],
      ["call-3", null],
    ]);

    const events = await server.ctx.store.events.after(run.id, 0);
    expect(events.filter((event) => holds(event.data))).toEqual([]);
    expect(events.reduce((sum, event) => sum + event.data.length, 0)).toBeLessThan(32 * 1024);
    expect(await server.ctx.store.toolCalls.status(run.id, "call-3")).toMatchObject({
      id: "call-3",
      state: "finished",
    });
    expect(holds(await (await fetch(`${server.url}/runs/${run.id}/steps`)).text())).toBe(false);
    expect(holds(JSON.stringify((await server.request("GET", `/sessions/${session.id}/messages`)).body))).toBe(false);
    // The history sent back to the model names the calls by their new ids.
    expect(server.upstream.requests).toHaveLength(2);
    const history = JSON.stringify(server.upstream.requests[1]?.body.messages);
    expect(history).toContain('"call-2"');
    expect(holds(history)).toBe(false);
  }, 60_000);
});
