/**
 * What a run's start reads back from the store when its request streams the run: the session's
 * history once (for the loop and for where the run's messages go on), and none of the run's
 * own events, which the stream is handed as they are published from the run's admission on.
 */
import { afterEach, expect, it } from "vitest";
import { openSse } from "../helpers/sse-client.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a streamed start reads none of its run's events and the session's history once; its stream is whole", async () => {
  const reads: string[] = [];
  let counting = false;
  const count = (part: string) => (name: string, _args: unknown[], call: () => unknown) => {
    if (counting && !["insert", "commit"].includes(name)) reads.push(`${part}.${name}`);
    return call();
  };
  server = await startTestServer({
    wrapStore: (store) => aroundStore(aroundStore(store, "events", count("events")), "messages", count("messages")),
  });
  const s = server;
  s.upstream.enqueue(
    { toolCalls: [{ id: "call_1", name: "list_files", arguments: "{}" }] },
    { text: ["all ", "done"] },
    { text: "again" },
  );
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  counting = true;
  const first = await (await openSse(`${s.url}/sessions/${session.id}/runs`, { method: "POST", body: { input: "go" } }))
    .ended;
  const second = await (
    await openSse(`${s.url}/sessions/${session.id}/runs`, { method: "POST", body: { input: "more" } })
  ).ended;
  counting = false;
  for (const events of [first, second]) {
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)?.event).toBe("run.finished");
  }
  expect(first.map((e) => e.event)).toContain("tool.started");
  expect(reads).toEqual(["messages.history", "messages.history"]);
  // The second run's recorder went on after the first run's messages.
  const stored = await s.ctx.store.messages.history(session.id);
  expect(stored.map((m) => m.seq)).toEqual(stored.map((_, i) => i + 1));
  expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant"]);
});

it("a chat's start (useChat's request) reads none of its run's events nor its status; its stream is whole", async () => {
  const reads: string[] = [];
  let counting = false;
  const count = (part: string) => (name: string, _args: unknown[], call: () => unknown) => {
    // The reads a stream may make of its run: its events, its status.
    if (counting && ["after", "afterWithin", "lastSeq", "access", "get"].includes(name)) reads.push(`${part}.${name}`);
    return call();
  };
  server = await startTestServer({
    wrapStore: (store) => aroundStore(aroundStore(store, "events", count("events")), "runs", count("runs")),
  });
  const s = server;
  s.upstream.enqueue(
    { toolCalls: [{ id: "call_1", name: "list_files", arguments: "{}" }] },
    { text: ["all ", "done"] },
  );
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  counting = true;
  const body = { id: "chat_1", messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "go" }] }] };
  const chunks = await (await openSse(`${s.url}/sessions/${session.id}/chat`, { method: "POST", body })).ended;
  counting = false;
  expect(chunks.at(-1)?.data).toBe("[DONE]");
  const types = chunks.slice(0, -1).map((c) => c.json.type);
  expect(types[0]).toBe("start");
  expect(types).toContain("tool-output-available");
  expect(types.at(-1)).toBe("finish");
  const text = chunks.filter((c) => c.json?.type === "text-delta").map((c) => c.json.delta);
  expect(text.join("")).toBe("all done");
  expect(reads).toEqual([]);
});
