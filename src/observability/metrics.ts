import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { FastHistogram, type HistogramSeries } from "./fast-histogram.js";
import type { CommitOutcome, CommittedBatch, Delivery } from "./observer.js";
import type { ModelRequestFact, RunFacts, ToolResultFact } from "./run-digest.js";

/** Buckets for things that take milliseconds (commits, deliveries, checkpoints). */
const FAST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
/** Buckets for things that take seconds (model requests, tools). */
const SLOW_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Gauges read when scraped, from parts built after the metrics. */
export interface GaugeSources {
  liveRuns?: () => number;
  approvalsPending?: () => number;
  sseConnections?: () => number;
}

/**
 * The server's Prometheus metrics (GET /metrics), in a registry of their own: the runs'
 * facts, the store's commit and checkpoint times, the event hub's delivery lag, the open
 * SSE streams, and the process metrics of prom-client.
 */
export class Metrics implements RunFacts {
  readonly registry = new Registry();
  readonly #sources: GaugeSources = {};
  /** The tools a `tool` label may name; any other name (the model may make one up) is `(unknown)`. */
  readonly #toolNames: ReadonlySet<string>;
  readonly #runsStarted: Counter;
  readonly #runsFinished: Counter<"status" | "stop_reason">;
  /** Histograms observed on every run are the cheap kind (FastHistogram); so are these. */
  readonly #modelDuration: FastHistogram;
  readonly #firstToken: FastHistogram;
  readonly #tokens: Counter<"type">;
  readonly #toolCalls: Counter<"tool" | "outcome">;
  readonly #toolDuration: FastHistogram;
  readonly #deliveryLag: HistogramSeries;
  readonly #commits: Record<CommittedBatch["operation"], Record<CommitOutcome, HistogramSeries>>;
  readonly #checkpointDuration: Histogram;
  readonly #overCap: Counter<"port">;
  readonly #webhookTries: Counter<"outcome">;
  readonly #webhooksGivenUp: Counter<"reason">;
  readonly #dropped: Counter<"port">;

  constructor({ toolNames }: { toolNames: readonly string[] }) {
    this.#toolNames = new Set(toolNames);
    const registers = [this.registry];
    const sources = this.#sources;
    this.#runsStarted = new Counter({ name: "agent_runs_started_total", help: "Runs started.", registers });
    this.#runsFinished = new Counter({
      name: "agent_runs_finished_total",
      help: "Runs finished, by final status and stop reason.",
      labelNames: ["status", "stop_reason"],
      registers,
    });
    new Gauge({
      name: "agent_runs_live",
      help: "Runs this process executes now (a start still storing its run is not one yet).",
      registers,
      collect() {
        this.set(sources.liveRuns?.() ?? 0);
      },
    });
    this.#modelDuration = new FastHistogram(
      "agent_model_request_duration_seconds",
      "Model requests, from sending to the end of the stream, by outcome (ok, error).",
      SLOW_BUCKETS,
      this.registry,
    );
    this.#firstToken = new FastHistogram(
      "agent_model_time_to_first_token_seconds",
      "Model requests, from sending to the first streamed token.",
      SLOW_BUCKETS,
      this.registry,
    );
    this.#tokens = new Counter({
      name: "agent_model_tokens_total",
      help: "Tokens the model reported, by type (input, output).",
      labelNames: ["type"],
      registers,
    });
    this.#toolCalls = new Counter({
      name: "agent_tool_calls_total",
      help: "Tool-call results, by tool and outcome (ok, or the result's error code such as DENIED).",
      labelNames: ["tool", "outcome"],
      registers,
    });
    this.#toolDuration = new FastHistogram(
      "agent_tool_duration_seconds",
      "Tool executions (calls whose tool ran), by tool and outcome.",
      SLOW_BUCKETS,
      this.registry,
    );
    new Gauge({
      name: "agent_approvals_pending",
      help: "Tool calls the runs this process executes now wait on an approval decision for.",
      registers,
      collect() {
        this.set(sources.approvalsPending?.() ?? 0);
      },
    });
    new Gauge({
      name: "agent_sse_connections",
      help: "Run event streams (SSE responses) open now.",
      registers,
      collect() {
        this.set(sources.sseConnections?.() ?? 0);
      },
    });
    this.#deliveryLag = new FastHistogram(
      "agent_event_delivery_lag_seconds",
      "From the end of an event batch's commit to the last live watcher having it.",
      FAST_BUCKETS,
      this.registry,
    ).series();
    const commitDuration = new FastHistogram(
      "agent_store_commit_duration_seconds",
      "Run writes to the database (create_run, commit_run), by outcome (ok; conflict: refused by a rule of the data, such as a busy session; error: failed).",
      FAST_BUCKETS,
      this.registry,
    );
    const commitSeries = (operation: CommittedBatch["operation"]) => ({
      ok: commitDuration.series({ operation, outcome: "ok" }),
      conflict: commitDuration.series({ operation, outcome: "conflict" }),
      error: commitDuration.series({ operation, outcome: "error" }),
    });
    this.#commits = { create_run: commitSeries("create_run"), commit_run: commitSeries("commit_run") };
    this.#checkpointDuration = new Histogram({
      name: "agent_store_checkpoint_duration_seconds",
      help: "SQLite WAL checkpoints.",
      buckets: FAST_BUCKETS,
      registers,
    });
    this.#overCap = new Counter({
      name: "agent_connections_over_cap_total",
      help: "Connections that came past MAX_CONNECTIONS (answered once, or dropped), by port setting.",
      labelNames: ["port"],
      registers,
    });
    this.#dropped = new Counter({
      name: "agent_connections_dropped_total",
      help: "Connections past MAX_CONNECTIONS closed before being answered (no slot left), by port setting.",
      labelNames: ["port"],
      registers,
    });
    this.#webhookTries = new Counter({
      name: "agent_webhook_tries_total",
      help: "Webhook delivery tries, by outcome (delivered: a 2xx; failed: anything else; refused: a private target; cut: by a shutdown).",
      labelNames: ["outcome"],
      registers,
    });
    this.#webhooksGivenUp = new Counter({
      name: "agent_webhook_deliveries_given_up_total",
      help: "Webhook deliveries given up, by reason (window: no 2xx within WEBHOOK_RETRY_WINDOW_MS; gone: the receiver answered 410 Gone; refused; cap: past WEBHOOK_MAX_PENDING_PER_KEY).",
      labelNames: ["reason"],
      registers,
    });
    collectDefaultMetrics({ register: this.registry });
  }

  webhookTry(outcome: "delivered" | "failed" | "refused" | "cut"): void {
    this.#webhookTries.inc({ outcome });
  }

  webhookGivenUp(reason: "window" | "gone" | "refused" | "cap", count: number): void {
    this.#webhooksGivenUp.inc({ reason }, count);
  }

  /** A connection came past the cap of `port` (PORT, METRICS_PORT), or one of those was closed unanswered. */
  connectionOverCap({ port, kind }: { port: string; kind: "over_cap" | "dropped" }): void {
    (kind === "over_cap" ? this.#overCap : this.#dropped).inc({ port });
  }

  /** Where the gauges read at scrape time come from. */
  readFrom(sources: GaugeSources): void {
    Object.assign(this.#sources, sources);
  }

  /** A WAL checkpoint took `seconds`. */
  observeCheckpoint(seconds: number): void {
    this.#checkpointDuration.observe(seconds);
  }

  /** The metrics in the Prometheus text format, and its content type. */
  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  committed(batch: CommittedBatch): void {
    this.#commits[batch.operation][batch.outcome].observe(batch.seconds);
  }

  delivered(delivery: Delivery): void {
    this.#deliveryLag.observe(delivery.lagSeconds);
  }

  runStarted(): void {
    this.#runsStarted.inc();
  }

  runFinished({ run }: Parameters<NonNullable<RunFacts["runFinished"]>>[0]): void {
    this.#runsFinished.inc({ status: run.status, stop_reason: run.stopReason ?? "none" });
  }

  modelRequest(fact: ModelRequestFact): void {
    this.#modelDuration.at({ outcome: fact.errorType === null ? "ok" : "error" }).observe(fact.latencyMs / 1000);
    if (fact.firstTokenMs !== null) this.#firstToken.at({}).observe(fact.firstTokenMs / 1000);
    if (fact.usage) {
      this.#tokens.inc({ type: "input" }, fact.usage.inputTokens);
      this.#tokens.inc({ type: "output" }, fact.usage.outputTokens);
    }
  }

  toolResult(fact: ToolResultFact): void {
    // A name the model made up is not a label value: there could be any number of them.
    const labels = { tool: this.#toolNames.has(fact.tool) ? fact.tool : "(unknown)", outcome: fact.outcome };
    this.#toolCalls.inc(labels);
    if (fact.executed) this.#toolDuration.at(labels).observe(fact.durationMs / 1000);
  }
}
