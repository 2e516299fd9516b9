import { Deadline } from "../deadline.js";
import { type RunDescription, RunTracer } from "./run-tracer.js";

/** How long (at most) stopping may wait for the last export: a collector that does not answer cannot hold up a shutdown. */
const SHUTDOWN_EXPORT_MS = 1000;

/** The OpenTelemetry SDK of a server that exports traces, and the runs' tracer that feeds it. */
export interface Tracing {
  runs: RunTracer;
  /**
   * Ends the spans of runs left open, exports what is buffered and stops the exporter; never
   * rejects, and after SHUTDOWN_EXPORT_MS, or at `closeBy` (the shutdown's shared deadline)
   * when that comes first, what is not exported yet is dropped.
   */
  shutdown(closeBy?: Deadline): Promise<void>;
}

/**
 * Starts the trace SDK (loaded now, in the background: see otel-sdk.ts) exporting over
 * OTLP/HTTP (JSON) to `${endpoint}/v1/traces`, batched. The service is `agent-server` unless
 * OTEL_SERVICE_NAME names another; the exporter reads OTEL_EXPORTER_OTLP_HEADERS (and the
 * other OTEL_ variables of its own) as usual.
 */
export function startTracing({
  endpoint,
  serviceName,
  modelBaseURL,
  describe,
}: {
  endpoint: string;
  serviceName: string;
  /** Where model requests go (OPENAI_BASE_URL), named on the `chat` spans. */
  modelBaseURL: string;
  describe: (runId: string) => Promise<RunDescription>;
}): Tracing {
  const sdk = import("./otel-sdk.js").then(({ startSdk }) => startSdk({ endpoint, serviceName }));
  const runs = new RunTracer(
    sdk.then((started) => started.tracer),
    describe,
    serverOf(modelBaseURL),
  );
  return {
    runs,
    async shutdown(closeBy = Deadline.NONE) {
      // A failed last export loses those spans, nothing else.
      const stopped = runs
        .endOpenRuns()
        .then(() => sdk)
        .then((started) => started.shutdown())
        .catch(() => {});
      await closeBy.wait(stopped, SHUTDOWN_EXPORT_MS);
    },
  };
}

/** A URL's host and port (the scheme's default when it names none). */
function serverOf(url: string): { address: string; port: number } | null {
  try {
    const { hostname, port, protocol } = new URL(url);
    return { address: hostname, port: port ? Number(port) : protocol === "https:" ? 443 : 80 };
  } catch {
    return null;
  }
}
