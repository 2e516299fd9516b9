/**
 * A denial's reason holding a lone UTF-16 surrogate (a JSON body may carry "\ud800") is recorded
 * well-formed: POST /runs/{id}/approvals/{callId} answers `decisionReason` with U+FFFD, and the
 * model is told "tool call denied: ...\uFFFD..." (README: "like all committed text, a lone UTF-16
 * surrogate in it becomes U+FFFD"). But the `approval.resolved` event (live and replayed from
 * GET /runs/{id}/events) carries the raw reason: its JSON holds the escape `\ud800`, which
 * strict JSON parsers (Rust serde_json, Go's would substitute silently, many others reject) cannot
 * read, and which disagrees with the recorded decision. Expected: the event's reason is the
 * recorded one (well-formed), on both stores.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("approval.resolved carries the reason as recorded, each lone surrogate U+FFFD", async () => {
    server = await startTestServer({ backend });
    const s = server;
    s.upstream.enqueue({
      toolCalls: [{ id: "call_w", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "a" }) }],
    });
    s.upstream.enqueue({ text: "ok" });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const run = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
    await until(
      async () => (await s.request("GET", `/runs/${run.id}`)).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    const decided = await s.request("POST", `/runs/${run.id}/approvals/call_w`, {
      body: { decision: "deny", reason: "not \ud800 this" },
    });
    expect(decided.status).toBe(200);
    expect(decided.body.decisionReason).toBe("not \uFFFD this");
    await until(
      async () => (await s.request("GET", `/runs/${run.id}`)).body.status,
      (status) => status === "finished",
      "the run's end",
    );
    const events = await s.request("GET", `/runs/${run.id}/events`);
    const text = typeof events.body === "string" ? events.body : JSON.stringify(events.body);
    const line = text.split("\n").find((l) => l.startsWith("data:") && l.includes('"approval.resolved"'));
    expect(line).toBeDefined();
    // No lone-surrogate escape on the wire; the reason as recorded.
    expect(line).not.toMatch(/\\ud800/i);
    expect(JSON.parse((line as string).slice(5)).reason).toBe("not \uFFFD this");
  });
});
