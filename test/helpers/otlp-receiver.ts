import http from "node:http";
import type { AddressInfo } from "node:net";

/** An attribute value as OTLP/JSON writes it. */
interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: AnyValue[] };
}

/** A span as the OTLP/HTTP JSON exporter sends it, its attributes read into plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** 1 INTERNAL, 3 CLIENT. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  /** The resource's attributes (`service.name`...). */
  resource: Record<string, unknown>;
}

const plainValue = (value: AnyValue): unknown =>
  value.stringValue ??
  (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
  value.doubleValue ??
  value.boolValue ??
  value.arrayValue?.values.map(plainValue);

const attributesOf = (list: { key: string; value: AnyValue }[] = []): Record<string, unknown> =>
  Object.fromEntries(list.map(({ key, value }) => [key, plainValue(value)]));

const ms = (nanos: string | number): number => Number(BigInt(nanos) / 1_000_000n);

export interface OtlpReceiver {
  /** The collector's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  /** Every POST received, by path. */
  posts: { path: string; contentType: string | undefined }[];
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

/** A real OTLP/HTTP receiver: collects what is POSTed to /v1/traces as JSON, answers 200. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const posts: OtlpReceiver["posts"] = [];
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      posts.push({ path: req.url ?? "", contentType: req.headers["content-type"] });
      if (req.method === "POST" && req.url === "/v1/traces") {
        // biome-ignore lint/suspicious/noExplicitAny: the OTLP/JSON body, read field by field.
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as any;
        for (const resourceSpans of body.resourceSpans ?? []) {
          const resource = attributesOf(resourceSpans.resource?.attributes);
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                name: span.name,
                kind: span.kind,
                startMs: ms(span.startTimeUnixNano),
                endMs: ms(span.endTimeUnixNano),
                attributes: attributesOf(span.attributes),
                status: { code: span.status?.code ?? 0, message: span.status?.message },
                resource,
              });
            }
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  server.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    posts,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
