/**
 * A run's start takes its session's record as kept since the session's creation or its last
 * start here (SessionRecords): it reads no session row, neither when it starts a run nor when
 * it is refused as busy, and a session deleted meanwhile is still refused.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SessionRecords } from "../../src/sessions/session-records.js";
import type { SessionRecord } from "../../src/store/store.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const record = (id: string, system: string | null): SessionRecord => ({
  id,
  owner: null,
  system,
  model: null,
  tools: null,
  approval: null,
  workspace: id,
  workspaceShared: false,
  providerProfile: null,
  planning: false,
  metadata: null,
  webhook: null,
  createdAt: "2026-12-06T00:00:00.000Z",
});

describe("SessionRecords", () => {
  it("keeps records within its bound, dropping the least recently used first, and never one larger than the bound", () => {
    const records = new SessionRecords(3 * 1024 + 3000);
    records.put(record("ses_a", "a".repeat(1000)));
    records.put(record("ses_b", "b".repeat(1000)));
    expect(records.get("ses_a")?.system).toHaveLength(1000);
    records.put(record("ses_c", "c".repeat(1000)));
    records.put(record("ses_d", null));
    // ses_b was used least recently: dropped to make room.
    expect(records.get("ses_b")).toBeUndefined();
    expect(records.size).toEqual({ sessions: 3, chars: 3 * 1024 + 2000 });
    records.put(record("ses_huge", "h".repeat(10_000)));
    expect(records.get("ses_huge")).toBeUndefined();
    records.forget("ses_a");
    expect(records.get("ses_a")).toBeUndefined();
    expect(records.size).toEqual({ sessions: 2, chars: 2 * 1024 + 1000 });
  });
});

describe("a run's start and its session's record", () => {
  async function start() {
    const reads: string[] = [];
    server = await startTestServer({
      wrapStore: (store) =>
        aroundStore(store, "sessions", (name, args, call) => {
          if (name === "get") reads.push(String(args[0]));
          return call();
        }),
    });
    return { s: server, reads };
  }

  it("reads no session row to start runs in a session created here, nor for a start refused as busy", async () => {
    const { s, reads } = await start();
    const system = "be brief ".repeat(20_000);
    const session = (await s.request("POST", "/sessions", { body: { system } })).body;
    s.upstream.enqueue(
      { text: "one" },
      { toolCalls: [{ id: "call_1", name: "write_file", arguments: '{"path":"a","content":"x"}' }] },
    );
    const runs = `/sessions/${session.id}/runs`;
    expect((await s.request("POST", `${runs}?wait=true`, { body: { input: "first" } })).body.run.status).toBe(
      "finished",
    );
    const second = (await s.request("POST", runs, { body: { input: "second" } })).body;
    await until(
      async () => (await s.request("GET", `/runs/${second.id}`)).body.status,
      (status) => status === "awaiting_approval",
      "the second run's approval request",
    );
    for (let i = 0; i < 5; i++) {
      const refused = await s.request("POST", runs, { body: { input: "busy" } });
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe("SESSION_BUSY");
    }
    expect(reads).toEqual([]);
    // The model was sent the session's system prompt all the same.
    expect(s.upstream.requests[0]?.body.messages[0]).toEqual({ role: "system", content: system });
    await s.request("DELETE", `/runs/${second.id}`);
  });

  it("a session deleted here is not found; one deleted behind this instance's back is found gone by the run's insert", async () => {
    const { s } = await start();
    const here = (await s.request("POST", "/sessions", { body: {} })).body;
    expect((await s.request("DELETE", `/sessions/${here.id}`)).status).toBe(204);
    const afterDelete = await s.request("POST", `/sessions/${here.id}/runs`, { body: { input: "hi" } });
    expect(afterDelete.status).toBe(404);

    const elsewhere = (await s.request("POST", "/sessions", { body: {} })).body;
    // As another instance over the same database would: the row goes, this instance keeps its record.
    await s.ctx.store.sessions.delete(elsewhere.id);
    const gone = await s.request("POST", `/sessions/${elsewhere.id}/runs`, { body: { input: "hi" } });
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe("NOT_FOUND");
    expect(s.upstream.requests).toHaveLength(0);
  });
});
