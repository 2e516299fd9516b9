/**
 * Traces of real runs over HTTP, exported by the OpenTelemetry SDK over OTLP/HTTP to a real
 * receiver in the test: GenAI spans with their parent links and attributes; none without an
 * endpoint.
 */
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../helpers/otlp-receiver.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await server?.close();
  await receiver?.close();
  server = undefined;
});

async function runToEnd(s: TestServer, sessionId: string, input: string): Promise<{ id: string; stopReason: string }> {
  const res = await s.request("POST", `/sessions/${sessionId}/runs?wait=true`, { body: { input } });
  expect(res.status).toBe(200);
  return res.body.run;
}

const STATUS_ERROR = 2;
const KIND_INTERNAL = 1;
const KIND_CLIENT = 3;

/** The spans whose parent is `parent`, in start order. */
const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] =>
  spans
    .filter((s) => s.parentSpanId === parent.spanId)
    .sort((a, b) => a.startMs - b.startMs || a.name.localeCompare(b.name));

describe("OpenTelemetry traces", () => {
  it.each(["sqlite", "postgres"] as const)(
    "exports invoke_agent, chat and execute_tool spans of each run, linked and described (%s)",
    async (backend) => {
      receiver = await startOtlpReceiver();
      server = await startTestServer({ backend, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
      const upstreamPort = Number(new URL(server.upstream.baseURL).port);
      const session = await server.request("POST", "/sessions", { body: {} });
      const sessionId = session.body.id;
      server.upstream.enqueue(
        {
          toolCalls: [
            { id: "call_list", name: "list_files", arguments: "{}" },
            { id: "call_read", name: "read_file", arguments: '{"path":"missing.txt"}' },
          ],
          usage: { prompt_tokens: 12, completion_tokens: 7 },
        },
        { text: "nothing there", usage: { prompt_tokens: 30, completion_tokens: 4 } },
        { status: 500, errorBody: { error: { message: "upstream broke" } } },
      );
      const good = await runToEnd(server, sessionId, "look around");
      expect(good.stopReason).toBe("complete");
      const bad = await runToEnd(server, sessionId, "again");
      expect(bad.stopReason).toBe("error");
      // Closing the server exports what the batch processor holds.
      await server.close();
      server = undefined;

      expect(receiver.posts.every((p) => p.path === "/v1/traces" && p.contentType === "application/json")).toBe(true);
      const { spans } = receiver;
      const runs = spans.filter((s) => s.name === "invoke_agent");
      expect(runs.map((s) => s.attributes["agent_server.run.id"]).sort()).toEqual([good.id, bad.id].sort());
      for (const run of runs) {
        expect(run.parentSpanId).toBeUndefined();
        expect(run.kind).toBe(KIND_INTERNAL);
        expect(run.resource["service.name"]).toBe("agent-server");
        expect(run.attributes).toMatchObject({
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.provider.name": "openai",
          "gen_ai.conversation.id": sessionId,
          "gen_ai.request.model": "fake-model",
        });
        // Every span of a run is in its trace.
        for (const child of childrenOf(spans, run)) {
          expect(child.traceId).toBe(run.traceId);
          expect(child.startMs).toBeGreaterThanOrEqual(run.startMs);
          expect(child.endMs).toBeLessThanOrEqual(run.endMs);
          expect(child.attributes["gen_ai.conversation.id"]).toBe(sessionId);
        }
      }

      const goodRun = runs.find((s) => s.attributes["agent_server.run.id"] === good.id) as ReceivedSpan;
      expect(goodRun.status.code).not.toBe(STATUS_ERROR);
      expect(goodRun.attributes).toMatchObject({
        "gen_ai.usage.input_tokens": 42,
        "gen_ai.usage.output_tokens": 11,
        "agent_server.run.stop_reason": "complete",
      });
      const children = childrenOf(spans, goodRun);
      expect(children.map((s) => s.name)).toEqual([
        "chat fake-model",
        "execute_tool list_files",
        "execute_tool read_file",
        "chat fake-model",
      ]);
      const [firstChat, list, read, secondChat] = children as [ReceivedSpan, ReceivedSpan, ReceivedSpan, ReceivedSpan];
      expect(firstChat.kind).toBe(KIND_CLIENT);
      expect(firstChat.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "fake-model",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "server.address": "127.0.0.1",
        "server.port": upstreamPort,
      });
      expect(secondChat.attributes).toMatchObject({
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.response.finish_reasons": ["stop"],
      });
      // The tools ran after the model's reply and before the next request.
      expect(list.startMs).toBeGreaterThanOrEqual(firstChat.endMs);
      expect(read.endMs).toBeLessThanOrEqual(secondChat.startMs);
      expect(list.kind).toBe(KIND_INTERNAL);
      expect(list.attributes).toMatchObject({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "list_files",
        "gen_ai.tool.call.id": "call_list",
        "gen_ai.tool.type": "function",
      });
      expect(list.status.code).not.toBe(STATUS_ERROR);
      expect(read.attributes).toMatchObject({ "gen_ai.tool.call.id": "call_read", "error.type": "NOT_FOUND" });
      expect(read.status.code).toBe(STATUS_ERROR);

      const badRun = runs.find((s) => s.attributes["agent_server.run.id"] === bad.id) as ReceivedSpan;
      expect(badRun.status.code).toBe(STATUS_ERROR);
      expect(badRun.attributes["error.type"]).toBe("MODEL_UPSTREAM");
      const [failedChat, ...rest] = childrenOf(spans, badRun);
      expect(rest).toEqual([]);
      expect(failedChat?.name).toBe("chat fake-model");
      expect(failedChat?.status.code).toBe(STATUS_ERROR);
      expect(failedChat?.attributes["error.type"]).toBe("MODEL_UPSTREAM");
      expect(spans).toHaveLength(2 + 4 + 1);
    },
  );

  it("a run left for the restart ends its span as suspended; its resumed part is a trace of its own", async () => {
    receiver = await startOtlpReceiver();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url };
    // The upstream outlives the first server.
    const upstream = await startFakeUpstream();
    const first = await startTestServer({ env, upstream });
    server = first;
    const session = await first.request("POST", "/sessions", { body: {} });
    upstream.enqueue(
      { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"a"}' }] },
      { text: "written" },
    );
    const run = await first.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "write" } });
    // Closed once the run waits for its decision (a fixed number of tries could end before it).
    await until(
      async () => (await first.request("GET", `/runs/${run.body.id}`)).body.status,
      (status) => status === "awaiting_approval",
      "the run to wait for approval",
    );
    await first.close({ keepDir: true, resume: true });
    server = undefined;
    const suspended = receiver.spans.filter((s) => s.name === "invoke_agent");
    expect(suspended).toHaveLength(1);
    expect(suspended[0]?.attributes).toMatchObject({
      "agent_server.run.id": run.body.id,
      "agent_server.run.suspended": true,
    });
    expect(receiver.spans.map((s) => s.name).sort()).toEqual(["chat fake-model", "invoke_agent"]);

    const second = await startTestServer({ env, dir: first.dir, upstream });
    server = second;
    const decided = await second.request("POST", `/runs/${run.body.id}/approvals/call_w`, {
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(200);
    expect((await second.ctx.manager.waitForFinish(run.body.id)).stopReason).toBe("complete");
    await second.close();
    server = undefined;
    await upstream.close();
    const resumed = receiver.spans.filter(
      (s) => s.name === "invoke_agent" && s.attributes["agent_server.run.id"] === run.body.id && s !== suspended[0],
    );
    expect(resumed).toHaveLength(1);
    expect(resumed[0]?.traceId).not.toBe(suspended[0]?.traceId);
    expect(resumed[0]?.attributes).toMatchObject({
      "gen_ai.conversation.id": session.body.id,
      "agent_server.run.stop_reason": "complete",
    });
    const children = receiver.spans.filter((s) => s.parentSpanId === resumed[0]?.spanId).map((s) => s.name);
    // The tool call, and the model request after it; the first request was the first process's.
    expect(children.sort()).toEqual(["chat fake-model", "execute_tool write_file"]);
  });

  it("a model request cut by a cancel is a failed chat span in a run that is not failed", async () => {
    receiver = await startOtlpReceiver();
    server = await startTestServer({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
    const session = await server.request("POST", "/sessions", { body: {} });
    server.upstream.enqueue({ text: ["partial", " answer"], hang: "after-chunks", afterChunks: 2 });
    const run = await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "go" } });
    // Cancelled while the model streams.
    const streaming = server;
    await until(
      () => streaming.upstream.requests.length,
      (n) => n > 0,
      "the model request",
    );
    expect((await server.request("DELETE", `/runs/${run.body.id}`)).status).toBe(202);
    expect((await server.ctx.manager.waitForFinish(run.body.id)).stopReason).toBe("aborted");
    await server.close();
    server = undefined;
    const runSpan = receiver.spans.find((s) => s.name === "invoke_agent") as ReceivedSpan;
    expect(runSpan.status.code).not.toBe(STATUS_ERROR);
    expect(runSpan.attributes["agent_server.run.stop_reason"]).toBe("aborted");
    const [chat, ...rest] = childrenOf(receiver.spans, runSpan);
    expect(rest).toEqual([]);
    expect(chat?.status.code).toBe(STATUS_ERROR);
    expect(chat?.attributes["error.type"]).toBe("aborted");
  });

  it("a collector that never answers does not hold up the shutdown", async () => {
    // Accepts the export and never answers: the exporter would wait its own 10 s timeout.
    const silent = createServer(() => {});
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    const { port } = silent.address() as AddressInfo;
    server = await startTestServer({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` } });
    const session = await server.request("POST", "/sessions", { body: {} });
    server.upstream.enqueue({ text: "ok" });
    expect((await runToEnd(server, session.body.id, "hi")).stopReason).toBe("complete");
    const exported = once(silent, "request");
    const closing = server.close();
    server = undefined;
    await exported;
    // Resolves although no answer came (the exporter would fail the shutdown after its 10 s).
    await closing;
    silent.closeAllConnections();
    await new Promise((resolve) => silent.close(resolve));
  });

  it("loads the trace SDK only when OTEL_EXPORTER_OTLP_ENDPOINT is set", () => {
    const loadsSdk = (endpoint: string | null): boolean => {
      const dir = tempDir("agent-otel-load-");
      // The built server's composition, in a process of its own, noting every module resolved.
      const script = `
        import { registerHooks } from "node:module";
        const resolved = [];
        registerHooks({ resolve(specifier, context, next) { resolved.push(specifier); return next(specifier, context); } });
        const { loadConfig } = await import("./dist/src/config.js");
        const { composeContext } = await import("./dist/src/compose.js");
        const { createLogger } = await import("./dist/src/logger.js");
        const env = { DATABASE_PATH: "${dir.path}/agent.db", WORKSPACE_ROOT: "${dir.path}/ws", OPENAI_MODEL: "m", OPENAI_API_KEY: "k", LOG_LEVEL: "silent" };
        ${endpoint ? `env.OTEL_EXPORTER_OTLP_ENDPOINT = "${endpoint}";` : ""}
        const ctx = composeContext(loadConfig(env), createLogger({ level: "silent" }));
        await new Promise((resolve) => setTimeout(resolve, 200));
        await ctx.tracing?.shutdown();
        await ctx.store.close();
        console.log(JSON.stringify(resolved.some((s) => s.startsWith("@opentelemetry/sdk-trace"))));
      `;
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        cwd: fileURLToPath(new URL("../..", import.meta.url)),
        encoding: "utf8",
      });
      dir.cleanup();
      expect(child.status, child.stderr).toBe(0);
      return JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "null");
    };
    expect(loadsSdk(null)).toBe(false);
    expect(loadsSdk("http://127.0.0.1:9")).toBe(true);
  });

  it("starts no trace SDK and exports nothing when OTEL_EXPORTER_OTLP_ENDPOINT is unset", async () => {
    receiver = await startOtlpReceiver();
    server = await startTestServer();
    expect(server.ctx.tracing).toBeNull();
    const session = await server.request("POST", "/sessions", { body: {} });
    server.upstream.enqueue({ toolCalls: [{ id: "call_list", name: "list_files", arguments: "{}" }] }, { text: "ok" });
    expect((await runToEnd(server, session.body.id, "look")).stopReason).toBe("complete");
    await server.close();
    server = undefined;
    expect(receiver.posts).toEqual([]);
  });
});
