import type { Config } from "../config.js";
import { DEFAULT_BASE_URL } from "../model/openai-client.js";
import type { EventHub } from "../runs/event-hub.js";
import type { Store } from "../store/store.js";
import { Metrics } from "./metrics.js";
import { observedSeams } from "./observed-seams.js";
import { RunDigest, type RunFacts } from "./run-digest.js";
import { startTracing, type Tracing } from "./tracing.js";

export interface Observability {
  /** The store every run writes through, its writes observed. */
  store: Store;
  /** The event hub, its deliveries observed. */
  hub: EventHub;
  /** To be told each time this process stops executing a run, ended or given up (see RunObserver.left). */
  left: (runId: string) => void;
  metrics: Metrics;
  /** Null when OTEL_EXPORTER_OTLP_ENDPOINT is unset: no trace SDK exists then. */
  tracing: Tracing | null;
}

/**
 * Metrics always, traces when an OTLP endpoint is configured: both fed by the runs' writes
 * through the store and the event hub, which this returns observed.
 */
export function observeRuns({
  config,
  store,
  toolNames,
  onSinkError,
}: {
  config: Config;
  store: Store;
  /** Every tool a run may be offered (the `tool` label's values). */
  toolNames: readonly string[];
  /** Told once per kind of fact that the metrics or the tracing failed to take. */
  onSinkError?: (err: unknown, kind: string) => void;
}): Observability {
  const metrics = new Metrics({ toolNames });
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  const tracing = endpoint
    ? startTracing({
        endpoint,
        serviceName: config.OTEL_SERVICE_NAME,
        modelBaseURL: config.model.baseURL ?? DEFAULT_BASE_URL,
        describe: async (runId) => {
          // Whose the run is, not its input (up to 1 MB).
          const run = await store.runs.access(runId);
          const session = run ? await store.sessions.get(run.sessionId) : null;
          return { sessionId: run?.sessionId ?? null, model: session?.model ?? config.model.model ?? null };
        },
      })
    : null;
  const sinks: RunFacts[] = tracing ? [metrics, tracing.runs] : [metrics];
  return { ...observedSeams(store, new RunDigest(sinks, onSinkError)), metrics, tracing };
}
