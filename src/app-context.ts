import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { Config } from "./config.js";
import type { ApiKeys } from "./http/auth.js";
import type { StreamTokens } from "./http/stream-tokens.js";
import type { Metrics } from "./observability/metrics.js";
import type { Tracing } from "./observability/tracing.js";
import type { EventHub } from "./runs/event-hub.js";
import type { RunManager } from "./runs/run-manager.js";
import type { RunService } from "./runs/run-service.js";
import type { SessionService } from "./sessions/session-service.js";
import type { Store } from "./store/store.js";
import type { ShellSandbox } from "./tools/index.js";
import type { WebhookWorker } from "./webhooks/worker.js";

/** A tool as `GET /tools` lists it. */
export interface ToolCatalogEntry {
  name: string;
  description: string;
  readOnly: boolean;
  defaultApproval: "allow" | "ask" | "deny";
  inputSchema: Record<string, unknown>;
  /** Shell tools only: whether their commands run in the sandbox. */
  sandbox?: "bwrap" | "none";
}

/** Everything the routes call into. */
export interface AppContext {
  config: Config;
  store: Store;
  hub: EventHub;
  manager: RunManager;
  runs: RunService;
  sessions: SessionService;
  /** Sends the webhook outbox. */
  webhooks: WebhookWorker;
  /** What other instances over the same database commit, relayed here; null with SQLite. */
  peers: { start(): void; stop(): void } | null;
  /** GET /metrics. */
  metrics: Metrics;
  /** The trace exporter, null when OTEL_EXPORTER_OTLP_ENDPOINT is unset. */
  tracing: Tracing | null;
  apiKeys: ApiKeys;
  /** An API key's own webhook signing key by its owner id (see GET /webhook-secret); null without one. */
  webhookOwnerKey: (owner: string) => Buffer | null;
  streamTokens: StreamTokens;
  tools: ToolCatalogEntry[];
  /** Where the shell tools run their commands. */
  shellSandbox: ShellSandbox;
  /** WORKSPACE_ROOT's real path at start: the tools work under it (see checkReadiness). */
  workspaceRealRoot: string;
  /** Why the model cannot be asked, or null when it is configured. */
  modelProblem: string | null;
  /** Heartbeat interval of SSE streams. */
  sseHeartbeatMs: number;
}

export type App = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  ZodTypeProvider
>;

declare module "fastify" {
  interface FastifyRequest {
    /** The API key's owner id, or null when the server runs without keys. */
    owner: string | null;
    /** Whether `owner` comes from a stream token (`?token=`) rather than the key itself. */
    byStreamToken: boolean;
  }
}
