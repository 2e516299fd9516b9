import type { Attributes, Context, Span, Tracer } from "@opentelemetry/api";
import type { RunView } from "../domain/run.js";
import type { ModelRequestFact, RunFacts, ToolResultFact } from "./run-digest.js";

/** What a run's spans say of it beside its facts, looked up once per run. */
export interface RunDescription {
  sessionId: string | null;
  model: string | null;
}

type OtelApi = typeof import("@opentelemetry/api");

/**
 * The OpenTelemetry API, loaded with the first traced run, so a server that does not trace
 * does not load it (prom-client's process metrics load its CommonJS build; this is the ES one:
 * ~50 modules more at every start).
 */
let otelApi: Promise<OtelApi> | undefined;
const loadOtelApi = (): Promise<OtelApi> => {
  otelApi ??= import("@opentelemetry/api");
  return otelApi;
};

/** The provider as the GenAI conventions name it: the server speaks the OpenAI Chat Completions API. */
const PROVIDER = "openai";

interface TracedRun {
  /** The run's operations on its spans, in the order of its facts, once it is described. */
  queue: Promise<void>;
  /** Set once the SDK and the API are loaded, before any operation of the run runs. */
  tracer: Tracer | null;
  api: OtelApi | null;
  description: RunDescription;
  span: Span | null;
  /** The run's span as its children's parent, once it is made. */
  context: Context | undefined;
  /** The latest end of its child spans (ms): the run's span ends no sooner. */
  childrenEnd: number;
}

/** The longest tool name the providers take (OpenAI's `^[a-zA-Z0-9_-]{1,64}$`). */
const TOOL_NAME_MAX = 64;

/**
 * A call's tool name as its span shows it: one the model made up may be as long as its reply
 * (a tool is not found under it), and is cut to TOOL_NAME_MAX characters, marked with "…".
 */
const shownToolName = (name: string): string =>
  name.length > TOOL_NAME_MAX ? `${name.slice(0, TOOL_NAME_MAX)}\u2026` : name;

/**
 * Spans following the OpenTelemetry GenAI semantic conventions, from the runs' facts: an
 * `invoke_agent` span per run (its start to its end in this process; a run given up here, or
 * left open at shutdown, ends its span `agent_server.run.suspended`), a `chat` span per
 * model request and an `execute_tool` span per tool call, both children of their run's span.
 * Spans carry the times the facts carry, so they are made as the facts arrive.
 */
export class RunTracer implements RunFacts {
  readonly #runs = new Map<string, TracedRun>();
  /** Queued operations not yet done (of finished runs too): awaited before the exporter stops. */
  readonly #pending = new Set<Promise<void>>();

  constructor(
    /** Resolves once the SDK is loaded; the runs' operations wait for it. */
    private readonly tracer: Promise<Tracer>,
    private readonly describe: (runId: string) => Promise<RunDescription>,
    /** The model server's host and port, for the `chat` spans (`server.address`, `server.port`). */
    private readonly server: { address: string; port: number } | null = null,
  ) {
    // An SDK that failed to load makes no spans; the runs' operations see that themselves.
    tracer.catch(() => {});
  }

  runStarted({ runId, at }: { runId: string; at: number }): void {
    this.#on(runId, at, () => {});
  }

  modelRequest(fact: ModelRequestFact): void {
    this.#on(fact.runId, fact.startedAt, (run) => {
      const model = run.description.model;
      const attributes: Attributes = {
        ...this.#common(run, "chat"),
        "gen_ai.request.model": model ?? undefined,
        "gen_ai.response.finish_reasons": fact.finishReason ? [fact.finishReason] : undefined,
        "gen_ai.usage.input_tokens": fact.usage?.inputTokens,
        "gen_ai.usage.output_tokens": fact.usage?.outputTokens,
        "gen_ai.response.time_to_first_chunk": fact.firstTokenMs === null ? undefined : fact.firstTokenMs / 1000,
        "server.address": this.server?.address,
        "server.port": this.server?.port,
      };
      const api = run.api as OtelApi;
      const span = (run.tracer as Tracer).startSpan(
        model ? `chat ${model}` : "chat",
        { kind: api.SpanKind.CLIENT, startTime: fact.startedAt, attributes },
        run.context,
      );
      if (fact.errorType !== null) failed(api, span, fact.errorType, fact.errorMessage);
      endChild(run, span, fact.startedAt + fact.latencyMs);
    });
  }

  toolResult(fact: ToolResultFact): void {
    const tool = shownToolName(fact.tool);
    this.#on(fact.runId, fact.startedAt, (run) => {
      const api = run.api as OtelApi;
      const span = (run.tracer as Tracer).startSpan(
        `execute_tool ${tool}`,
        {
          kind: api.SpanKind.INTERNAL,
          startTime: fact.startedAt,
          attributes: {
            ...this.#common(run, "execute_tool"),
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": fact.toolCallId,
            "gen_ai.tool.type": "function",
          },
        },
        run.context,
      );
      if (fact.outcome !== "ok") failed(api, span, fact.outcome, null);
      endChild(run, span, fact.startedAt + fact.durationMs);
    });
  }

  runFinished({ run: view, at }: { run: RunView; at: number }): void {
    this.#on(view.id, at, (run) => {
      const span = run.span as Span;
      span.setAttributes({
        "gen_ai.conversation.id": view.sessionId,
        "gen_ai.usage.input_tokens": view.stats.inputTokens,
        "gen_ai.usage.output_tokens": view.stats.outputTokens,
        "agent_server.run.stop_reason": view.stopReason ?? undefined,
      });
      if (view.stopReason === "error")
        failed(run.api as OtelApi, span, view.error?.code ?? "_OTHER", view.error?.message ?? null);
      // A child's end is its start plus a duration rounded to the ms: it may pass `at` by one.
      span.end(Math.max(at, run.childrenEnd));
    });
    this.#runs.delete(view.id);
  }

  /** Ends the span of a run this process gave up (nothing if it has none open here). */
  runLeft({ runId, at }: { runId: string; at: number }): void {
    if (!this.#runs.has(runId)) return;
    this.#suspend(runId, at);
    this.#runs.delete(runId);
  }

  /**
   * Ends the spans of runs still open (left for a restart) once their queued operations are
   * done, and resolves when every span is ended: called before the exporter stops.
   */
  async endOpenRuns(): Promise<void> {
    const now = Date.now();
    for (const runId of this.#runs.keys()) this.#suspend(runId, now);
    this.#runs.clear();
    await Promise.all([...this.#pending]);
  }

  /** Queues the end of the run's span at `at`, marked suspended: the run goes on elsewhere or later. */
  #suspend(runId: string, at: number): void {
    this.#on(runId, at, (run) => {
      run.span?.setAttribute("agent_server.run.suspended", true);
      run.span?.end(Math.max(at, run.childrenEnd));
    });
  }

  /** Queues `operation` on the run's spans; the first fact of a run (at `at`) starts its span. */
  #on(runId: string, at: number, operation: (run: TracedRun) => void): void {
    let run = this.#runs.get(runId);
    if (!run) {
      const traced: TracedRun = {
        queue: Promise.resolve(),
        tracer: null,
        api: null,
        description: { sessionId: null, model: null },
        span: null,
        context: undefined,
        childrenEnd: 0,
      };
      const described = this.describe(runId).catch(() => traced.description);
      traced.queue = Promise.all([described, this.tracer, loadOtelApi()]).then(([description, tracer, api]) => {
        traced.description = description;
        traced.tracer = tracer;
        traced.api = api;
        traced.span = tracer.startSpan("invoke_agent", {
          kind: api.SpanKind.INTERNAL,
          startTime: at,
          attributes: {
            ...this.#common(traced, "invoke_agent"),
            "gen_ai.request.model": description.model ?? undefined,
            "agent_server.run.id": runId,
          },
        });
        traced.context = api.trace.setSpan(api.ROOT_CONTEXT, traced.span);
      });
      this.#runs.set(runId, traced);
      run = traced;
    }
    const current = run;
    const queued = current.queue.then(() => operation(current)).catch(() => {});
    current.queue = queued;
    this.#pending.add(queued);
    void queued.then(() => this.#pending.delete(queued));
  }

  #common(run: TracedRun, operation: string): Attributes {
    return {
      "gen_ai.operation.name": operation,
      "gen_ai.provider.name": PROVIDER,
      "gen_ai.conversation.id": run.description.sessionId ?? undefined,
    };
  }
}

/** Ends a child span of `run` at `end` (ms), which its run's span then does not end before. */
function endChild(run: TracedRun, span: Span, end: number): void {
  run.childrenEnd = Math.max(run.childrenEnd, end);
  span.end(end);
}

/** Marks a span failed, as the conventions record errors: `error.type` and an ERROR status. */
function failed(api: OtelApi, span: Span, errorType: string, message: string | null): void {
  span.setAttribute("error.type", errorType);
  span.setStatus({ code: api.SpanStatusCode.ERROR, ...(message ? { message } : {}) });
}
