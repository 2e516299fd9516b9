/**
 * GET /metrics after real runs over HTTP (the fake upstream as the model), read with a
 * Prometheus text-format parser: the counters, gauges and histograms move as the runs did.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { Metrics } from "../../src/observability/metrics.js";
import { gate } from "../fakes/gate.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer;
afterEach(async () => {
  await server?.close();
});

async function scrape(headers: Record<string, string> = {}): Promise<Exposition> {
  const res = await fetch(`${server.url}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return new Exposition(await res.text());
}

async function newSession(body: unknown = {}): Promise<string> {
  const res = await server.request("POST", "/sessions", { body });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function runToEnd(sessionId: string, input: string): Promise<{ stopReason: string }> {
  const res = await server.request("POST", `/sessions/${sessionId}/runs?wait=true`, { body: { input } });
  expect(res.status).toBe(200);
  return res.body.run;
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("GET /metrics", () => {
  it.each(["sqlite", "postgres"] as const)(
    "counts runs, model requests, tokens, tool calls, approvals, streams, commits and deliveries (%s)",
    async (backend) => {
      server = await startTestServer({ backend });
      const sessionId = await newSession();
      const before = await scrape();
      expect(before.value("agent_runs_started_total")).toBe(0);
      expect(before.type("agent_model_request_duration_seconds")).toBe("HISTOGRAM");
      // prom-client's process metrics.
      expect(before.type("process_cpu_user_seconds_total")).toBe("COUNTER");
      expect(before.type("nodejs_eventloop_lag_seconds")).toBe("GAUGE");

      // A successful tool, then a failing one (a missing file), each followed by an answer.
      server.upstream.enqueue(
        {
          toolCalls: [{ id: "call_list", name: "list_files", arguments: "{}" }],
          usage: { prompt_tokens: 11, completion_tokens: 3 },
        },
        { text: "empty", usage: { prompt_tokens: 20, completion_tokens: 4 } },
        { toolCalls: [{ id: "call_read", name: "read_file", arguments: '{"path":"missing.txt"}' }] },
        { text: "no such file" },
      );
      expect((await runToEnd(sessionId, "list")).stopReason).toBe("complete");
      expect((await runToEnd(sessionId, "read")).stopReason).toBe("complete");

      // A call that needs approval, watched over SSE while it waits.
      server.upstream.enqueue(
        { toolCalls: [{ id: "call_write", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }] },
        { text: "written" },
      );
      const started = await server.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "write" } });
      expect(started.status).toBe(201);
      const runId = started.body.id;
      const watcher = await openSse(`${server.url}/runs/${runId}/events`);
      await watcher.waitFor((e) => e.event === "approval.requested");
      const waiting = await scrape();
      expect(waiting.value("agent_approvals_pending")).toBe(1);
      expect(waiting.value("agent_sse_connections")).toBe(1);
      expect(waiting.value("agent_runs_live")).toBe(1);
      const decided = await server.request("POST", `/runs/${runId}/approvals/call_write`, {
        body: { decision: "approve" },
      });
      expect(decided.status).toBe(200);
      const events = await watcher.ended;
      expect(events.at(-1)?.json.run.stopReason).toBe("complete");

      const after = await until(scrape, (m) => m.value("agent_sse_connections") === 0);
      expect(after.value("agent_runs_started_total")).toBe(3);
      expect(after.value("agent_runs_finished_total", { status: "finished", stop_reason: "complete" })).toBe(3);
      expect(after.value("agent_runs_live")).toBe(0);
      expect(after.value("agent_approvals_pending")).toBe(0);
      expect(after.value("agent_sse_connections")).toBe(0);

      expect(after.histogram("agent_model_request_duration_seconds", { outcome: "ok" }).count).toBe(6);
      expect(after.histogram("agent_model_request_duration_seconds", { outcome: "error" }).count).toBe(0);
      expect(after.histogram("agent_model_time_to_first_token_seconds").count).toBe(6);
      // 11 + 20, then the fake's default usage (10 in, 5 out) for the 4 other requests.
      expect(after.value("agent_model_tokens_total", { type: "input" })).toBe(31 + 40);
      expect(after.value("agent_model_tokens_total", { type: "output" })).toBe(7 + 20);

      expect(after.value("agent_tool_calls_total", { tool: "list_files", outcome: "ok" })).toBe(1);
      expect(after.value("agent_tool_calls_total", { tool: "read_file", outcome: "NOT_FOUND" })).toBe(1);
      expect(after.value("agent_tool_calls_total", { tool: "write_file", outcome: "ok" })).toBe(1);
      expect(after.histogram("agent_tool_duration_seconds", { tool: "read_file", outcome: "NOT_FOUND" }).count).toBe(1);
      expect(after.histogram("agent_tool_duration_seconds", { tool: "write_file", outcome: "ok" }).count).toBe(1);

      expect(
        after.histogram("agent_store_commit_duration_seconds", { operation: "create_run", outcome: "ok" }).count,
      ).toBe(3);
      // At least: the user message, the assistant message, the tool's start and result, the end.
      expect(
        after.histogram("agent_store_commit_duration_seconds", { operation: "commit_run", outcome: "ok" }).count,
      ).toBeGreaterThanOrEqual(15);
      // The watched run's deliveries: at least approval.resolved, tool.started, the messages, the end.
      expect(after.histogram("agent_event_delivery_lag_seconds").count).toBeGreaterThanOrEqual(4);
      server.upstream.assertComplete();
    },
  );

  // A queued run's run.started is written by store.runs.startQueued, which the observed store
  // did not wrap: agent_runs_started_total missed it while agent_runs_finished_total counted it.
  it.each(["sqlite", "postgres"] as const)(
    "counts the start of a run started from its session's queue (%s)",
    async (backend) => {
      server = await startTestServer({ backend });
      const sessionId = await newSession();
      const first = gate();
      server.upstream.enqueue({ text: "first", gate: first.wait }, { text: "second" });
      const running = await server.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "one" } });
      expect(running.status).toBe(201);
      const queued = await server.request("POST", `/sessions/${sessionId}/runs`, {
        body: { input: "two", ifBusy: "enqueue" },
      });
      expect(queued.status).toBe(201);
      expect(queued.body.status).toBe("queued");
      first.open();
      expect((await finishedRun(server, queued.body.id)).stopReason).toBe("complete");
      const m = await scrape();
      expect(m.value("agent_runs_finished_total", { status: "finished", stop_reason: "complete" })).toBe(2);
      expect(m.value("agent_runs_started_total")).toBe(2);
      // The start is a write of the run like any later one.
      expect(m.histogram("agent_store_commit_duration_seconds", { operation: "create_run", outcome: "ok" }).count).toBe(
        2,
      );
    },
  );

  it("counts a denied call, an unknown tool and a failed model request by their outcomes", async () => {
    server = await startTestServer();
    const sessionId = await newSession({ approval: { tools: { shell: "deny" } } });
    server.upstream.enqueue(
      {
        toolCalls: [
          { id: "call_sh", name: "shell", arguments: '{"command":"true"}' },
          { id: "call_x", name: "made_up_tool", arguments: "{}" },
        ],
      },
      { status: 500, errorBody: { error: { message: "upstream broke" } } },
    );
    expect((await runToEnd(sessionId, "go")).stopReason).toBe("error");
    const m = await scrape();
    expect(m.value("agent_tool_calls_total", { tool: "shell", outcome: "DENIED" })).toBe(1);
    // A name the model made up is not a label value.
    expect(m.value("agent_tool_calls_total", { tool: "(unknown)", outcome: "UNKNOWN_TOOL" })).toBe(1);
    // Neither call executed: no duration.
    expect(m.histogramSeries("agent_tool_duration_seconds")).toBe(0);
    expect(m.histogram("agent_model_request_duration_seconds", { outcome: "ok" }).count).toBe(1);
    expect(m.histogram("agent_model_request_duration_seconds", { outcome: "error" }).count).toBe(1);
    expect(m.value("agent_runs_finished_total", { status: "finished", stop_reason: "error" })).toBe(1);
  });

  it("reports the checkpoints it is told of", async () => {
    server = await startTestServer();
    const before = (await scrape()).histogram("agent_store_checkpoint_duration_seconds");
    server.ctx.metrics.observeCheckpoint(0.02);
    server.ctx.metrics.observeCheckpoint(0.005);
    const after = (await scrape()).histogram("agent_store_checkpoint_duration_seconds");
    expect(after.count - before.count).toBeGreaterThanOrEqual(2);
    expect(after.sum - before.sum).toBeGreaterThanOrEqual(0.025);
  });

  it("times the SQLite WAL checkpoints its worker runs after a run's commits", async () => {
    server = await startTestServer();
    server.upstream.enqueue({ text: "checkpointed" });
    expect((await runToEnd(await newSession(), "hi")).stopReason).toBe("complete");
    // The worker checkpoints once a second when the WAL has frames.
    const m = await until(scrape, (e) => e.histogram("agent_store_checkpoint_duration_seconds").count > 0);
    const seen = m.histogram("agent_store_checkpoint_duration_seconds");
    expect(seen.count).toBeGreaterThan(0);
    expect(seen.sum).toBeGreaterThan(0);
  });

  it("needs a key when AGENT_API_KEYS is set", async () => {
    const key = "k".repeat(32);
    server = await startTestServer({ env: { AGENT_API_KEYS: key } });
    const anonymous = await fetch(`${server.url}/metrics`);
    expect(anonymous.status).toBe(401);
    expect((await anonymous.json()).error.code).toBe("UNAUTHORIZED");
    const m = await scrape({ authorization: `Bearer ${key}` });
    expect(m.type("agent_runs_started_total")).toBe("COUNTER");
  });

  it("is not served on PORT when METRICS_PORT is set", async () => {
    server = await startTestServer({ env: { METRICS_PORT: "0" } });
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
  });

  it("the README's Observability section lists exactly the server's own metrics", async () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const section = readme.slice(readme.indexOf("## Observability"), readme.indexOf("**Traces.**"));
    const listed = [...section.matchAll(/^\| `(agent_\w+)`/gm)].map((m) => m[1]).sort();
    const defined = (await new Metrics({ toolNames: [] }).registry.getMetricsAsJSON())
      .map((m) => m.name)
      .filter((name) => name.startsWith("agent_"))
      .sort();
    expect(listed).toEqual(defined);
  });
});
