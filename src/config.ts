import { z } from "zod";
import { allowedHostsSetting } from "./config-hosts.js";
import { settingRuleProblems } from "./config-rules.js";
import {
  choiceSetting,
  completeListSetting,
  intSetting,
  isPostgresUrl,
  listSetting,
  MAX_KEEP_ALIVE_MS,
  MAX_STORED_BUDGET,
  MAX_TIMER_MS,
  msSetting,
  optionalIntSetting,
  originProblem,
  stringSetting,
} from "./config-settings.js";
import { type ApprovalCeiling, parseApprovalCeiling } from "./domain/approval-ceiling.js";
import {
  DEFAULT_SESSIONS_PER_KEY,
  defaultMaxConnections,
  defaultRunsPerKey,
  defaultStreamsPerKey,
  readOpenFileLimit,
} from "./key-limits.js";
import { type ModelConfig, parseModelEnv } from "./model/config.js";
import { DEFAULT_MAX_PENDING_PER_KEY } from "./webhooks/pending-cap.js";

export { configSecrets } from "./config-secrets.js";
export { MAX_STORED_BUDGET, MAX_TIMER_MS };

/** The server's environment; every variable is named in its error. */
const EnvSchema = z.object({
  PORT: intSetting(3000, { min: 0, max: 65535 }),
  HOST: stringSetting("127.0.0.1"),
  DATABASE_PATH: stringSetting("./data/agent.db"),
  /** `postgres://...`: the store is this PostgreSQL database instead of the SQLite file. */
  DATABASE_URL: z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z.string().refine(isPostgresUrl, { error: "must be a postgres:// (or postgresql://) connection URL" }).optional(),
  ),
  /**
   * At most one transaction per this many ms for the commits of live runs (text deltas,
   * messages); commits made meanwhile share it (0: one per turn of the event loop).
   */
  GROUP_COMMIT_MS: intSetting(2, { min: 0, max: 50 }),
  /** With DATABASE_URL: how long a statement may wait for its answer (see DEFAULT_QUERY_TIMEOUT_MS). */
  DATABASE_QUERY_TIMEOUT_MS: msSetting(30_000, { min: 1_000, max: 3_600_000 }),
  WORKSPACE_ROOT: stringSetting("./workspaces"),
  /**
   * Each key of visible ASCII (`!` to `~`): what `Authorization: Bearer <key>` carries as one
   * token (a space ends it, and a header's bytes are read as Latin-1).
   */
  AGENT_API_KEYS: completeListSetting.pipe(
    z.array(
      z
        .string()
        .min(16, "each key must be at least 16 characters")
        .regex(/^[\x21-\x7e]*$/, "each key must be of visible ASCII characters (no space, no accented letter)"),
    ),
  ),
  LOG_LEVEL: z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  ),
  MAX_CONCURRENT_RUNS: intSetting(64, { min: 1, max: 100_000 }),
  APPROVAL_TIMEOUT_MS: msSetting(900_000),
  BODY_LIMIT_BYTES: intSetting(1_048_576, { min: 1024, max: 100 * 1_048_576 }),
  /**
   * The largest body of `POST /sessions/{id}/chat`, which posts back an assistant message with
   * every tool output of its run; default: see DEFAULT_CHAT_BODY_LIMIT_BYTES.
   */
  CHAT_BODY_LIMIT_BYTES: optionalIntSetting({ min: 1024, max: 100 * 1_048_576 }),
  CORS_ORIGINS: listSetting.pipe(
    z.array(
      z.string().superRefine((origin, ctx) => {
        const problem = origin === "*" ? null : originProblem(origin);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      }),
    ),
  ),
  ON_RESTART: z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z.enum(["resume", "abort"]).default("resume"),
  ),
  /**
   * How long a lease on a live run holds unrenewed (renewed every third of it): over a shared
   * database, how soon a peer takes over the runs of a lost instance.
   */
  RUN_LEASE_MS: msSetting(30_000, { min: 300, max: 3_600_000 }),
  /**
   * This instance's name as the owner of runs; by default a fresh one per process. A stable
   * one (a pod or container name) lets a restarted instance take its own runs back at once.
   */
  INSTANCE_ID: z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,128}$/, "must be 1-128 letters, digits, dots, dashes, colons or underscores")
      .optional(),
  ),
  DEFAULT_MAX_TURNS: intSetting(20, { min: 1, max: 1000 }),
  // Stop conditions: the loop guard's repeat limit (0: off) and each run's default budgets (unset: none).
  LOOP_REPEAT_LIMIT: intSetting(3, { min: 0, max: 1000 }).refine((n) => n !== 1, "must be 0 (off) or at least 2"),
  DEFAULT_MAX_TOKENS: optionalIntSetting({ min: 1, max: MAX_STORED_BUDGET }),
  DEFAULT_MAX_DURATION_MS: optionalIntSetting({ min: 1, max: MAX_TIMER_MS }),
  DEFAULT_MAX_TOOL_CALLS: optionalIntSetting({ min: 1, max: 100_000 }),
  MODEL_MAX_RETRIES: intSetting(2, { min: 0, max: 10 }),
  MODEL_REQUEST_TIMEOUT_MS: msSetting(60_000),
  MODEL_IDLE_TIMEOUT_MS: msSetting(60_000),
  MODEL_STREAM_MAX_MS: msSetting(1_800_000, { min: 1_000 }),
  /** The most characters (text, reasoning and tool calls) one model reply may stream. */
  MODEL_MAX_OUTPUT_CHARS: intSetting(1_000_000, { min: 1_000, max: 100_000_000 }),
  SHUTDOWN_GRACE_MS: intSetting(5_000, { min: 0, max: 60_000 }),
  /** How long a stream token (`POST /runs/{id}/stream-token`) may be used. */
  STREAM_TOKEN_TTL_MS: msSetting(300_000, { min: 1_000, max: 86_400_000 }),
  /** Signs stream tokens; by default derived from AGENT_API_KEYS. */
  STREAM_TOKEN_SECRET: z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z.string().min(32, "must be at least 32 characters").optional(),
  ),

  // Closed doors: what one client, or anyone who can reach the port, may take.
  /** `1`: serve without AGENT_API_KEYS on an address other machines reach (refused otherwise). */
  ALLOW_UNAUTHENTICATED: z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z
      .enum(["1", "0", "true", "false"])
      .default("0")
      .transform((v) => v === "1" || v === "true"),
  ),
  /**
   * Without AGENT_API_KEYS: host names (besides IP addresses, localhost and HOST) a request's
   * `Host` may name; `*.domain`: the names under domain; `*`: any. Others are refused as DNS rebinding.
   */
  ALLOWED_HOSTS: allowedHostsSetting,
  /** Live runs one API key may have at once; 0 = no such limit; default: a quarter of MAX_CONCURRENT_RUNS. */
  MAX_RUNS_PER_KEY: optionalIntSetting({ min: 0, max: 100_000 }),
  /** Sessions one API key may keep; 0 = no limit; default with keys: 1000. */
  MAX_SESSIONS_PER_KEY: optionalIntSetting({ min: 0, max: 10_000_000 }),
  /** Event streams and `?wait=true` waits one key may hold open on an instance; 0 = no limit; default 100. */
  MAX_STREAMS_PER_KEY: optionalIntSetting({ min: 0, max: 1_000_000 }),
  /**
   * Connections the server holds at once, from every client together (each a file descriptor);
   * past it a few more are answered and closed (OVER_CAP_SLOTS), and the rest closed as they are
   * accepted. 0 = no limit; default: see defaultMaxConnections.
   */
  MAX_CONNECTIONS: optionalIntSetting({ min: 0, max: 10_000_000 }),
  /** The loosest approval policy a session or run may set, e.g. `shell=ask,write_file=ask,*=allow`. */
  APPROVAL_POLICY_MAX: stringSetting(""),
  /** Time to receive a whole request, headers and body (a slow client is cut with 408). */
  REQUEST_TIMEOUT_MS: msSetting(30_000, { min: 100 }),
  /** Time to receive a request's headers. */
  HEADERS_TIMEOUT_MS: msSetting(10_000, { min: 100 }),
  /** How long an idle keep-alive connection stays open. */
  KEEP_ALIVE_TIMEOUT_MS: msSetting(5_000, { min: 100, max: MAX_KEEP_ALIVE_MS }),
  /**
   * How long an answer may sit in the server's memory with none of its bytes taken by its client;
   * then its connection is cut (event streams and waits are not: see cutStalledAnswers).
   */
  RESPONSE_WRITE_TIMEOUT_MS: msSetting(30_000, { min: 100 }),
  /** Tool calls of one model reply that are executed; the rest get a result saying so. */
  MAX_TOOL_CALLS_PER_TURN: intSetting(64, { min: 1, max: 10_000 }),
  /** Where `shell` runs: in a bubblewrap sandbox (`bwrap`: required; `auto`: when it works) or not (`off`). */
  SHELL_SANDBOX: choiceSetting(["auto", "bwrap", "off"], "auto"),
  /** `1` lets sandboxed shell commands reach the network. */
  SHELL_NETWORK: choiceSetting(["0", "1"], "0").transform((value) => value === "1"),
  /**
   * The size in bytes (256 MiB by default) of each of a sandboxed command's in-memory file systems
   * (/tmp, /dev/shm): what they hold is host memory that no process owns, until the command ends.
   */
  SHELL_TMP_BYTES: intSetting(256 * 1024 * 1024, { min: 1024 * 1024, max: 16 * 1024 ** 3 }),
  /**
   * How many processes (threads included) a sandboxed command may have at once; binds only
   * when the server does not run as root (the kernel exempts root from this limit).
   */
  SHELL_MAX_PROCESSES: intSetting(1024, { min: 16, max: 1_000_000 }),

  // Webhooks.
  /** Where runs post their events when neither they nor their session name a target. */
  WEBHOOK_URL: stringSetting(""),
  /** Signs every delivery (Standard Webhooks): `whsec_` and 24 to 64 bytes in base64. */
  WEBHOOK_SECRET: stringSetting(""),
  /** `1` lets webhooks reach private and loopback addresses. */
  WEBHOOK_ALLOW_PRIVATE: choiceSetting(["0", "1"], "0").transform((value) => value === "1"),
  /** How long one delivery may take. */
  WEBHOOK_TIMEOUT_MS: msSetting(10_000, { min: 100, max: 120_000 }),
  /** The wait after a delivery's first failure; each further one doubles it, up to WEBHOOK_RETRY_MAX_MS (not below it: see config-rules.ts). */
  WEBHOOK_RETRY_BASE_MS: msSetting(5_000, { min: 10 }),
  WEBHOOK_RETRY_MAX_MS: msSetting(3_600_000, { min: 10 }),
  /** How long after its event a delivery is still tried. */
  WEBHOOK_RETRY_WINDOW_MS: msSetting(86_400_000, { min: 1_000 }),
  /** How often the outbox is looked at for due deliveries. */
  WEBHOOK_POLL_MS: msSetting(1_000, { min: 10, max: 60_000 }),
  /**
   * The most deliveries one API key (without keys: the server) may have pending; every tenth
   * poll its newest past it are given up, with their reason (0 = no limit).
   */
  WEBHOOK_MAX_PENDING_PER_KEY: intSetting(DEFAULT_MAX_PENDING_PER_KEY, { min: 0, max: 10_000_000 }),

  // Observability.
  /** Serves GET /metrics on this port of HOST (without keys) instead of on PORT. */
  METRICS_PORT: optionalIntSetting({ min: 0, max: 65535 }),
  /** Where traces are exported over OTLP/HTTP (`/v1/traces` is appended); unset: no tracing at all. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(
    (raw) => (typeof raw === "string" && raw.trim() !== "" ? raw.trim() : undefined),
    z
      .string()
      .refine((value) => /^https?:\/\/[^/\s]+/.test(value) && URL.canParse(value), {
        error: "must be an http or https URL (the collector's base, e.g. http://127.0.0.1:4318)",
      })
      .optional(),
  ),
  OTEL_SERVICE_NAME: stringSetting("agent-server"),
});

/**
 * CHAT_BODY_LIMIT_BYTES's default (never below BODY_LIMIT_BYTES): about one turn's tool outputs
 * at the tools' caps (MAX_TOOL_CALLS_PER_TURN's default 64 calls of up to 250,000 characters).
 */
export const DEFAULT_CHAT_BODY_LIMIT_BYTES = 16 * 1_048_576;

type Resolved =
  | "CHAT_BODY_LIMIT_BYTES"
  | "AGENT_API_KEYS"
  | "STREAM_TOKEN_SECRET"
  | "MAX_RUNS_PER_KEY"
  | "MAX_SESSIONS_PER_KEY"
  | "MAX_STREAMS_PER_KEY"
  | "MAX_CONNECTIONS"
  | "APPROVAL_POLICY_MAX";
export type Config = Omit<z.infer<typeof EnvSchema>, Resolved> & {
  STREAM_TOKEN_SECRET?: string;
  CHAT_BODY_LIMIT_BYTES: number;
  AGENT_API_KEYS: string[];
  /** 0: no limit. */
  MAX_RUNS_PER_KEY: number;
  /** 0: no limit. */
  MAX_SESSIONS_PER_KEY: number;
  /** 0: no limit (always without keys). */
  MAX_STREAMS_PER_KEY: number;
  /** 0: no limit. */
  MAX_CONNECTIONS: number;
  /** Undefined when APPROVAL_POLICY_MAX is not set. */
  APPROVAL_POLICY_MAX: ApprovalCeiling | undefined;
  model: ModelConfig;
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/**
 * Reads and validates the configuration; throws ConfigError naming each bad variable.
 * `openFileLimit` (default: this process's) bounds MAX_STREAMS_PER_KEY's and MAX_CONNECTIONS's defaults.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  { openFileLimit = readOpenFileLimit() }: { openFileLimit?: number | null } = {},
): Config {
  const problems: string[] = [];
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      problems.push(`${String(issue.path[0] ?? "(environment)")}: ${issue.message}`);
  }
  const model = parseModelEnv(env);
  if (!model.ok) problems.push(...model.errors);
  if (!parsed.success || !model.ok) throw new ConfigError(problems);
  const data = parsed.data;
  const keyed = data.AGENT_API_KEYS.length > 0;
  const ceiling = parseApprovalCeiling(data.APPROVAL_POLICY_MAX);
  if (!ceiling.ok) problems.push(`APPROVAL_POLICY_MAX: ${ceiling.error}`);
  problems.push(...settingRuleProblems(data));
  if (problems.length || !ceiling.ok) throw new ConfigError(problems);
  return {
    ...data,
    CHAT_BODY_LIMIT_BYTES: data.CHAT_BODY_LIMIT_BYTES ?? Math.max(DEFAULT_CHAT_BODY_LIMIT_BYTES, data.BODY_LIMIT_BYTES),
    MAX_RUNS_PER_KEY: keyed ? (data.MAX_RUNS_PER_KEY ?? defaultRunsPerKey(data.MAX_CONCURRENT_RUNS)) : 0,
    MAX_SESSIONS_PER_KEY: keyed ? (data.MAX_SESSIONS_PER_KEY ?? DEFAULT_SESSIONS_PER_KEY) : 0,
    MAX_STREAMS_PER_KEY: keyed ? (data.MAX_STREAMS_PER_KEY ?? defaultStreamsPerKey(openFileLimit)) : 0,
    MAX_CONNECTIONS: data.MAX_CONNECTIONS ?? defaultMaxConnections(openFileLimit, data.MAX_CONCURRENT_RUNS),
    APPROVAL_POLICY_MAX: data.APPROVAL_POLICY_MAX === "" ? undefined : ceiling.value,
    model: model.value,
  };
}
