import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/domain/run.js";
import { RunTracer } from "../../src/observability/run-tracer.js";

const ms = ([seconds, nanos]: [number, number]) => seconds * 1000 + nanos / 1e6;

describe("a run's spans", () => {
  it("the run's span ends no sooner than its children, whose ends are a start plus a rounded duration", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const tracer = new RunTracer(Promise.resolve(provider.getTracer("test")), async () => ({
      sessionId: "ses_1",
      model: "m",
    }));
    const at = 1_800_000_000_000;
    tracer.runStarted({ runId: "run_1", at });
    // A model request measured to 10.6 ms, reported as 11, ending at `at + 11`; a tool that ran
    // after it 0.4 ms, reported as 0 (rounded down); the run's end seen at `at + 10`.
    tracer.modelRequest({
      runId: "run_1",
      sessionId: "ses_1",
      turn: 1,
      startedAt: at,
      latencyMs: 11,
      firstTokenMs: 2,
      usage: null,
      finishReason: "tool_calls",
      errorType: null,
      errorMessage: null,
    });
    tracer.toolResult({
      runId: "run_1",
      sessionId: "ses_1",
      toolCallId: "call_1",
      tool: "list_files",
      outcome: "ok",
      executed: true,
      startedAt: at + 10,
      durationMs: 0,
    });
    tracer.runFinished({
      run: { id: "run_1", sessionId: "ses_1", stats: {}, stopReason: "complete" } as RunView,
      at: at + 10,
    });
    await tracer.endOpenRuns();
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    const run = spans.find((span) => span.name === "invoke_agent");
    const children = spans.filter((span) => span !== run);
    expect(children.map((span) => span.name).sort()).toEqual(["chat m", "execute_tool list_files"]);
    for (const child of children) expect(ms(child.endTime)).toBeLessThanOrEqual(ms(run?.endTime ?? [0, 0]));
    expect(ms(run?.endTime ?? [0, 0])).toBe(at + 11);
  });

  it("a run given up here ends its span at once, as suspended; a run with no span here makes none", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const tracer = new RunTracer(Promise.resolve(provider.getTracer("test")), async () => ({
      sessionId: "ses_1",
      model: "m",
    }));
    const at = 1_800_000_000_000;
    tracer.runStarted({ runId: "run_1", at });
    tracer.runLeft({ runId: "run_1", at: at + 5 });
    tracer.runLeft({ runId: "run_2", at: at + 5 });
    // Its span is ended before the exporter stops: endOpenRuns finds nothing more to end.
    await tracer.endOpenRuns();
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    expect(spans.map((span) => [span.name, span.attributes["agent_server.run.id"]])).toEqual([
      ["invoke_agent", "run_1"],
    ]);
    expect(spans[0]?.attributes["agent_server.run.suspended"]).toBe(true);
    expect(ms(spans[0]?.endTime ?? [0, 0])).toBe(at + 5);
  });
  it("a tool name the model made up, however long, names its span cut to 64 characters (the providers' limit)", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const tracer = new RunTracer(Promise.resolve(provider.getTracer("test")), async () => ({
      sessionId: "ses_1",
      model: "m",
    }));
    const at = 1_800_000_000_000;
    tracer.runStarted({ runId: "run_1", at });
    const madeUp = "x".repeat(1_000_000);
    tracer.toolResult({
      runId: "run_1",
      sessionId: "ses_1",
      toolCallId: "call_1",
      tool: madeUp,
      outcome: "UNKNOWN_TOOL",
      executed: false,
      startedAt: at,
      durationMs: 0,
    });
    await tracer.endOpenRuns();
    await provider.forceFlush();
    const span = exporter.getFinishedSpans().find((s) => s.name.startsWith("execute_tool"));
    expect({ name: span?.name, tool: span?.attributes["gen_ai.tool.name"] }).toEqual({
      name: `execute_tool ${"x".repeat(64)}\u2026`,
      tool: `${"x".repeat(64)}\u2026`,
    });
  });
});
