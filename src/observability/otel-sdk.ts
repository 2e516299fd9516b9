import type { Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

/**
 * The OpenTelemetry trace SDK, exporting over OTLP/HTTP (JSON) to `${endpoint}/v1/traces` in
 * batches. Imported only when tracing is configured: loading the SDK costs ~25 MB of memory.
 */
export function startSdk({ endpoint, serviceName }: { endpoint: string; serviceName: string }): {
  tracer: Tracer;
  shutdown(): Promise<void>;
} {
  const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, "")}/v1/traces` });
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ "service.name": serviceName })),
    spanProcessors: [new BatchSpanProcessor({ exporter })],
  });
  return { tracer: provider.getTracer("agent-server"), shutdown: () => provider.shutdown() };
}
