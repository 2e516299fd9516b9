import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { sharedTestServer } from "../helpers/shared-server.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

let server: TestServer;

// One server for the file's tests, each in sessions of its own.
sharedTestServer(
  () => startTestServer(),
  (shared) => {
    server = shared;
  },
);

async function createSession(body: unknown = {}) {
  const res = await server.request("POST", "/sessions", { body });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

describe("runs over HTTP", () => {
  it("a streamed run with one tool call sends gapless events ending with run.finished complete", async () => {
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_1", name: "list_files", arguments: ["{", "}"] }] },
      { text: ["the work", "space is empty"] },
    );
    const session = await createSession();
    const stream = await openSse(`${server.url}/sessions/${session.id}/runs`, {
      method: "POST",
      body: { input: "what is here?" },
    });
    expect(stream.status).toBe(200);
    expect(stream.headers["content-type"]).toMatch(/text\/event-stream/);
    const events = await stream.ended;
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    expect(events[0]?.event).toBe("run.started");
    const last = events[events.length - 1];
    expect(last?.event).toBe("run.finished");
    expect(last?.json.run.stopReason).toBe("complete");
    expect(events.filter((e) => e.event === "tool.started").map((e) => e.json.tool)).toEqual(["list_files"]);
    const text = events
      .filter((e) => e.event === "text.delta")
      .map((e) => e.json.text)
      .join("");
    expect(text).toBe("the workspace is empty");

    const messages = await server.request("GET", `/sessions/${session.id}/messages`);
    expect(messages.body.items.map((m: { role: string }) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(messages.body.items[2].toolCallId).toBe("call_1");
    // What went back to the model: the assistant's tool call and the matching tool result.
    const second = server.upstream.requests[1]?.body;
    expect(second.messages.at(-2).tool_calls[0].id).toBe("call_1");
    expect(second.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_1" });
    server.upstream.assertComplete();
  });

  it("?wait=true answers when the run ends, with its final text", async () => {
    server.upstream.enqueue({ text: "hello there" });
    const session = await createSession();
    const res = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" } });
    expect(res.status).toBe(200);
    expect(res.body.run.status).toBe("finished");
    expect(res.body.run.stopReason).toBe("complete");
    expect(res.body.text).toBe("hello there");
    expect(res.body.run.stats).toMatchObject({ modelCalls: 1, turns: 1, inputTokens: 10, outputTokens: 5 });
  });

  it("?wait=true on a run that stopped before answering gives text null, not an empty string", async () => {
    server.upstream.enqueue({ toolCalls: [{ id: "call_l", name: "list_files", arguments: "{}" }] });
    const session = await createSession();
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "list", maxTurns: 1 },
    });
    expect(waited.body.run.stopReason).toBe("max_turns");
    expect(waited.body.text).toBeNull();
  });

  it("?wait=true does not pass text written beside tool calls off as the answer", async () => {
    server.upstream.enqueue({
      text: "Let me look at the files first.",
      toolCalls: [{ id: "call_n", name: "list_files", arguments: "{}" }],
    });
    const session = await createSession();
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "list", maxTurns: 1 },
    });
    expect(waited.body.run.stopReason).toBe("max_turns");
    expect(waited.body.text).toBeNull();
  });

  it("a second run while one is active is refused with SESSION_BUSY naming the active run", async () => {
    let release!: () => void;
    server.upstream.enqueue({ text: "slow", gate: new Promise<void>((r) => (release = r)) });
    const session = await createSession();
    const first = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "one" } });
    expect(first.status).toBe(201);
    const second = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "two" } });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe("SESSION_BUSY");
    expect(second.body.error.details.runId).toBe(first.body.id);
    const view = await server.request("GET", `/sessions/${session.id}`);
    expect(view.body.activeRunId).toBe(first.body.id);
    release();
    await server.ctx.manager.waitForFinish(first.body.id);
  });

  it("the same Idempotency-Key returns the same run instead of starting a second", async () => {
    server.upstream.enqueue({ text: "once" });
    const session = await createSession();
    const headers = { "idempotency-key": "abc-123" };
    const a = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "x" }, headers });
    await server.ctx.manager.waitForFinish(a.body.id);
    const b = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "x" }, headers });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(a.headers.get("idempotent-replayed")).toBeNull();
    expect(b.body.id).toBe(a.body.id);
    expect(server.upstream.requests).toHaveLength(1);
  });

  it("the same Idempotency-Key with another webhook target is 409 IDEMPOTENCY_KEY_REUSED naming it, not the first run's deliveries going to the old receiver", async () => {
    const hooks = await startTestServer({ env: { WEBHOOK_SECRET } });
    try {
      hooks.upstream.enqueue({ text: "once" });
      const session = (await hooks.request("POST", "/sessions", { body: {} })).body;
      const headers = { "idempotency-key": "hook-1" };
      const webhook = (url: string) => ({ url, events: ["run.finished"] });
      const a = await hooks.request("POST", `/sessions/${session.id}/runs`, {
        body: { input: "x", webhook: webhook("https://hooks.example.com/a") },
        headers,
      });
      expect(a.status).toBe(201);
      await hooks.ctx.manager.waitForFinish(a.body.id);
      const same = await hooks.request("POST", `/sessions/${session.id}/runs`, {
        body: { input: "x", webhook: webhook("https://hooks.example.com/a") },
        headers,
      });
      expect(same.status).toBe(201);
      expect(same.body.id).toBe(a.body.id);
      const other = await hooks.request("POST", `/sessions/${session.id}/runs`, {
        body: { input: "x", webhook: webhook("https://hooks.example.com/b") },
        headers,
      });
      expect(other.status).toBe(409);
      expect(other.body.error).toMatchObject({ code: "IDEMPOTENCY_KEY_REUSED", details: { differs: ["webhook"] } });
      expect(hooks.upstream.requests).toHaveLength(1);
    } finally {
      await hooks.close();
    }
  });

  it("approve: the tool waits for the decision, runs after it, and the same decision again answers 200", async () => {
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }] },
      { text: "written" },
    );
    const session = await createSession();
    const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
    const stream = await openSse(`${server.url}/runs/${run.id}/events`);
    const requested = await stream.waitFor((e) => e.event === "approval.requested");
    expect(requested.json).toMatchObject({ toolCallId: "call_w", tool: "write_file", input: { path: "a.txt" } });
    expect((await server.request("GET", `/runs/${run.id}`)).body.status).toBe("awaiting_approval");
    const pending = await server.request("GET", `/runs/${run.id}/approvals`);
    expect(pending.body.items.map((a: { toolCallId: string }) => a.toolCallId)).toEqual(["call_w"]);

    const decide = (decision: string) =>
      server.request("POST", `/runs/${run.id}/approvals/call_w`, { body: { decision, reason: "ok" } });
    expect((await decide("approve")).status).toBe(200);
    expect((await decide("approve")).status).toBe(200);
    const conflicting = await decide("deny");
    expect(conflicting.status).toBe(409);
    expect(conflicting.body.error.code).toBe("APPROVAL_CONFLICT");
    const events = await stream.ended;
    expect(events.map((e) => e.event)).toContain("approval.resolved");
    expect(events.at(-1)?.json.run.stopReason).toBe("complete");
    const unknown = await server.request("POST", `/runs/${run.id}/approvals/nope`, { body: { decision: "approve" } });
    expect(unknown.status).toBe(404);
  });

  it("a stream with nothing to send yet gets its response headers at once, not with the first heartbeat", async () => {
    const quiet = await startTestServer({ sseHeartbeatMs: 120_000 });
    try {
      quiet.upstream.enqueue({
        toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
      });
      const session = (await quiet.request("POST", "/sessions", { body: {} })).body;
      const run = (await quiet.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
      const first = await openSse(`${quiet.url}/runs/${run.id}/events`);
      const requested = await first.waitFor((e) => e.event === "approval.requested");
      first.close();
      // Resumed at the last event of a run waiting for a person: no frame to send, yet the
      // client learns at once that it is connected (openSse resolves on the response headers).
      const resumed = await Promise.race([
        openSse(`${quiet.url}/runs/${run.id}/events`, { headers: { "last-event-id": requested.id ?? "" } }),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000)),
      ]);
      expect(resumed).not.toBeNull();
      resumed?.close();
    } finally {
      await quiet.close();
    }
  });

  it("DELETE during approval answers 202 cancelling, runs no tool, and run.finished aborted follows", async () => {
    server.upstream.enqueue({ toolCalls: [{ id: "call_s", name: "shell", arguments: '{"command":"touch ran"}' }] });
    const session = await createSession();
    const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
    const stream = await openSse(`${server.url}/runs/${run.id}/events`);
    await stream.waitFor((e) => e.event === "approval.requested");
    const cancel = await server.request("DELETE", `/runs/${run.id}`);
    expect(cancel.status).toBe(202);
    expect(cancel.body.status).toBe("cancelling");
    const events = await stream.ended;
    expect(events.at(-1)?.json.run.stopReason).toBe("aborted");
    expect(events.map((e) => e.event)).not.toContain("tool.started");
    const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
    expect(messages.at(-1)).toMatchObject({ role: "tool", toolCallId: "call_s", isError: true });
    expect(messages.at(-1).metadata.errorCode).toBe("ABORTED");
    const again = await server.request("DELETE", `/runs/${run.id}`);
    expect(again.status).toBe(200);
    const late = await server.request("POST", `/runs/${run.id}/approvals/call_s`, { body: { decision: "approve" } });
    expect(late.status).toBe(409);
  });

  it("replay with Last-Event-ID sends only what came after, then ends at run.finished", async () => {
    server.upstream.enqueue({ text: ["a", "b", "c"] });
    const session = await createSession();
    const res = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "x" } });
    const all = await (await openSse(`${server.url}/runs/${res.body.run.id}/events`)).ended;
    const tail = await (
      await openSse(`${server.url}/runs/${res.body.run.id}/events`, { headers: { "last-event-id": "2" } })
    ).ended;
    expect(tail.map((e) => e.id)).toEqual(all.slice(2).map((e) => e.id));
    const viaQuery = await (await openSse(`${server.url}/runs/${res.body.run.id}/events?after=3`)).ended;
    expect(viaQuery.map((e) => e.id)).toEqual(all.slice(3).map((e) => e.id));
    // Resuming after the last event of a finished run: 204, nothing more to come.
    const past = await openSse(`${server.url}/runs/${res.body.run.id}/events`, {
      headers: { "last-event-id": all.at(-1)?.id ?? "" },
    });
    expect(past.status).toBe(204);
    expect(await past.ended).toEqual([]);
  });

  it("a client that disconnects does not cancel the run", async () => {
    let release!: () => void;
    server.upstream.enqueue({ text: ["partial ", "answer"], gate: new Promise<void>((r) => (release = r)) });
    const session = await createSession();
    const stream = await openSse(`${server.url}/sessions/${session.id}/runs`, { method: "POST", body: { input: "x" } });
    const started = await stream.waitFor((e) => e.event === "run.started");
    stream.close();
    release();
    const run = await server.ctx.manager.waitForFinish(started.json.runId);
    expect(run.stopReason).toBe("complete");
  });
});

describe("sessions and their workspaces", () => {
  it("deleting a session deletes its runs, its messages and its own workspace, never a shared one another session has", async () => {
    server.upstream.enqueue({ text: "hi" }, { text: "hi" });
    const own = (await server.request("POST", "/sessions", { body: {} })).body;
    const shared = (await server.request("POST", "/sessions", { body: { workspace: "team" } })).body;
    await server.request("POST", "/sessions", { body: { workspace: "team" } });
    const ownPath = server.ctx.sessions.workspacePath(await server.ctx.sessions.record(own.id, null));
    const sharedPath = server.ctx.sessions.workspacePath(await server.ctx.sessions.record(shared.id, null));
    const run = await server.request("POST", `/sessions/${own.id}/runs?wait=true`, { body: { input: "x" } });
    await server.request("POST", `/sessions/${shared.id}/runs?wait=true`, { body: { input: "x" } });
    expect(existsSync(ownPath)).toBe(true);

    expect((await server.request("DELETE", `/sessions/${own.id}`)).status).toBe(204);
    expect((await server.request("DELETE", `/sessions/${shared.id}`)).status).toBe(204);
    expect(existsSync(ownPath)).toBe(false);
    expect(existsSync(sharedPath)).toBe(true);
    expect((await server.request("GET", `/sessions/${own.id}`)).status).toBe(404);
    expect((await server.request("GET", `/runs/${run.body.run.id}`)).status).toBe(404);
    expect(await server.ctx.store.messages.history(own.id)).toEqual([]);
  });
});
