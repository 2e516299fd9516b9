import { join } from "node:path";
import type { Logger } from "pino";
import type { ModelClient } from "./agent/model.js";
import { PlanToolName } from "./agent/plan.js";
import type { AppContext, ToolCatalogEntry } from "./app-context.js";
import { type Config, ConfigError, configSecrets } from "./config.js";
import { clampToCeiling, unknownCeilingTools } from "./domain/approval-ceiling.js";
import { DEFAULT_WEBHOOK_EVENTS } from "./domain/webhook.js";
import { ApiKeys } from "./http/auth.js";
import { StreamTokens } from "./http/stream-tokens.js";
import { newId } from "./ids.js";
import { modelClientFromConfig, modelNotConfiguredReason } from "./model/index.js";
import { observeRuns } from "./observability/observability.js";
import { waitForRelayedEnd } from "./runs/event-relay.js";
import { peerWakeups } from "./runs/peers.js";
import { RunManager } from "./runs/run-manager.js";
import { type RunDefaults, RunService } from "./runs/run-service.js";
import { SessionService } from "./sessions/session-service.js";
import { openStoreOrExplain, prepareShellSandbox, prepareWorkspaceRoot } from "./startup-checks.js";
import type { Store } from "./store/store.js";
import { bindWorkspaceTools, describeWorkspaceTools, WORKSPACE_TOOL_NAMES, workspaceToolsFor } from "./tools/index.js";
import { ceilingInForce } from "./tools/shell-ceiling.js";
import { WebhookSender } from "./webhooks/send.js";
import { ownerWebhookKeys, webhookKey } from "./webhooks/signature.js";
import { WebhookWorker } from "./webhooks/worker.js";

export interface ComposeOptions {
  /** Replaces the model client built from the configuration (tests, benchmarks). */
  model?: ModelClient;
  sseHeartbeatMs?: number;
  /** Wraps the store (tests: a fault-injecting store). */
  wrapStore?: (store: Store) => Store;
  /** How long a run's end may fail to be stored before it is reported anyway. */
  finishReportMs?: number;
  /** An opened store (PostgreSQL: see openPgStoreOrExplain); by default the SQLite file at DATABASE_PATH. */
  store?: Store;
}

/**
 * Wires the parts together from the configuration: database, model, runs, sessions. Runs a
 * previous process left are recovered by `recoverLeftRuns`, once the server listens.
 */
export function composeContext(config: Config, logger: Logger, options: ComposeOptions = {}): AppContext {
  const misnamed = config.APPROVAL_POLICY_MAX
    ? unknownCeilingTools(config.APPROVAL_POLICY_MAX, WORKSPACE_TOOL_NAMES)
    : [];
  if (misnamed.length) {
    throw new ConfigError([
      `APPROVAL_POLICY_MAX: unknown tools ${misnamed.join(", ")} (tools: ${WORKSPACE_TOOL_NAMES.join(", ")})`,
    ]);
  }
  // Checkpoint durations go to the metrics, which observe the store once it is open.
  let observeCheckpoint = (_durationMs: number) => {};
  const opened =
    options.store ??
    openStoreOrExplain(config.DATABASE_PATH, {
      groupCommitMs: config.GROUP_COMMIT_MS,
      onCheckpoint: (durationMs) => observeCheckpoint(durationMs),
      onCheckpointError: (message) => logger.warn({ message }, "a WAL checkpoint failed; the next one tries again"),
      onFileProblem: (problem) => logger.error({ problem }, "the database file is no longer where it was opened"),
    });
  // Over a shared database a run may resume on another instance, in the same workspace path.
  const workspaceRealRoot = prepareWorkspaceRoot(config.WORKSPACE_ROOT, { shared: opened.shared });
  if (opened.shared) {
    logger.info(
      { workspaceRoot: workspaceRealRoot },
      "runs may move between instances: WORKSPACE_ROOT must be the same shared volume on every instance",
    );
  }
  const shellSandbox = prepareShellSandbox({
    mode: config.SHELL_SANDBOX,
    network: config.SHELL_NETWORK,
    tmpBytes: config.SHELL_TMP_BYTES,
    maxProcesses: config.SHELL_MAX_PROCESSES,
    directory: workspaceRealRoot,
  });
  if (shellSandbox.kind === "none" && config.SHELL_SANDBOX === "auto") {
    logger.warn(
      { reason: shellSandbox.reason },
      "shell commands run unsandboxed, with the server's user, files and network (SHELL_SANDBOX=auto found no working bwrap); shell_readonly is not offered",
    );
  }
  const { ceiling: approvalCeiling, shellDenied } = ceilingInForce({
    configured: config.APPROVAL_POLICY_MAX,
    sandbox: shellSandbox,
    keyCount: config.AGENT_API_KEYS.length,
  });
  if (shellDenied) {
    logger.warn(
      "shell is denied to every key: it would run unsandboxed, where a command of one key reads the server's environment, every API key included; make the sandbox work (SHELL_SANDBOX) or name shell in APPROVAL_POLICY_MAX to choose otherwise",
    );
  }
  const workspaceTools = workspaceToolsFor(shellSandbox);
  // Every run's writes and deliveries pass these two, observed for metrics and traces.
  const { store, hub, left, metrics, tracing } = observeRuns({
    config,
    store: options.wrapStore ? options.wrapStore(opened) : opened,
    toolNames: [...WORKSPACE_TOOL_NAMES, ...Object.values(PlanToolName)],
    onSinkError: (err, kind) =>
      logger.error({ err, kind }, "metrics or tracing failed to take a fact of runs; such facts are lost"),
  });
  observeCheckpoint = (durationMs) => metrics.observeCheckpoint(durationMs / 1000);
  const { notifications } = store;
  const model =
    options.model ??
    modelClientFromConfig(config.model, {
      maxRetries: config.MODEL_MAX_RETRIES,
      requestTimeoutMs: config.MODEL_REQUEST_TIMEOUT_MS,
      idleTimeoutMs: config.MODEL_IDLE_TIMEOUT_MS,
      streamMaxMs: config.MODEL_STREAM_MAX_MS,
      maxOutputChars: config.MODEL_MAX_OUTPUT_CHARS,
      // An upstream's error may quote the request, which may hold any of them (a pasted key).
      secrets: configSecrets(config),
    });
  const manager = new RunManager({
    store,
    hub,
    model,
    defaultModel: config.model.model,
    toolsFor: (session) =>
      bindWorkspaceTools({
        // Pinned to the real path: tools refuse to follow the workspace if it is replaced.
        workspace: join(workspaceRealRoot, session.workspace),
        names: session.tools ?? undefined,
        tools: workspaceTools,
      }),
    maxConcurrentRuns: config.MAX_CONCURRENT_RUNS,
    maxRunsPerKey: config.MAX_RUNS_PER_KEY,
    approvalTimeoutMs: config.APPROVAL_TIMEOUT_MS,
    finishReportMs: options.finishReportMs,
    approvalCeiling,
    maxToolCallsPerTurn: config.MAX_TOOL_CALLS_PER_TURN,
    defaultWebhook: config.WEBHOOK_URL ? { url: config.WEBHOOK_URL, events: [...DEFAULT_WEBHOOK_EVENTS] } : null,
    instance: { id: config.INSTANCE_ID ?? newId("inst"), leaseMs: config.RUN_LEASE_MS },
    onRestart: config.ON_RESTART,
    waitElsewhere: notifications ? (runId, signal) => waitForRelayedEnd({ store, hub, runId, signal }) : undefined,
    // A run given up here (taken over by another instance, or a shutdown) is settled in the metrics and traces;
    // given up unfinished, its watchers here read what the instance that took it over committed.
    onLeft: (runId, { unfinished }) => {
      left(runId);
      if (unfinished) peers?.left(runId);
    },
    logger,
  });
  // Over a database other instances share: their runs' events reach the watchers here, and
  // their requests the runs executing here.
  const peers = notifications ? peerWakeups({ store, hub, notifications, manager, logger }) : null;
  peers?.start();
  // Read from the runs executed here when scraped: not the slots starts still writing their run
  // hold (one refused then never ran); the calls those runs wait for, however they came to wait
  // (asked here, or again by a run resumed after a restart), so neither can drift.
  const { executed } = manager;
  metrics.readFrom({ liveRuns: () => executed.executing, approvalsPending: () => executed.approvalsPending() });
  const webhookPolicy = { signing: config.WEBHOOK_SECRET !== "", allowPrivate: config.WEBHOOK_ALLOW_PRIVATE };
  const sessions = new SessionService({
    store,
    manager,
    workspaceRoot: config.WORKSPACE_ROOT,
    workspaceRealRoot,
    toolNames: WORKSPACE_TOOL_NAMES,
    logger,
    maxSessionsPerKey: config.MAX_SESSIONS_PER_KEY,
    approvalCeiling,
    webhookPolicy,
  });
  const apiKeys = new ApiKeys(config.AGENT_API_KEYS);
  const webhookSigningKey = webhookKey(config.WEBHOOK_SECRET);
  const webhookOwnerKey = ownerWebhookKeys({
    serverKey: webhookSigningKey,
    digestOf: (owner) => apiKeys.digestOf(owner),
  });
  const webhooks = new WebhookWorker({
    store,
    sender: new WebhookSender({
      key: webhookSigningKey,
      ownerKey: webhookOwnerKey,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    }),
    schedule: {
      baseMs: config.WEBHOOK_RETRY_BASE_MS,
      maxMs: config.WEBHOOK_RETRY_MAX_MS,
      windowMs: config.WEBHOOK_RETRY_WINDOW_MS,
    },
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    pollMs: config.WEBHOOK_POLL_MS,
    logger,
    maxPendingPerKey: config.WEBHOOK_MAX_PENDING_PER_KEY,
    facts: metrics,
  });
  const runs = new RunService({
    store,
    manager,
    sessions,
    defaults: runDefaultsOf(config),
    webhookPolicy,
    hidesServerDefaultTarget: config.AGENT_API_KEYS.length > 0,
  });
  // What a call gets without any override, under the ceiling.
  const tools: ToolCatalogEntry[] = describeWorkspaceTools(shellSandbox).map((tool) => ({
    ...tool,
    defaultApproval: clampToCeiling(tool.defaultApproval, tool.name, approvalCeiling),
  }));
  return {
    config,
    store,
    hub,
    manager,
    sessions,
    runs,
    webhooks,
    peers,
    metrics,
    tracing,
    apiKeys,
    webhookOwnerKey,
    streamTokens: new StreamTokens({
      secret: StreamTokens.secretFrom({ configured: config.STREAM_TOKEN_SECRET, apiKeys: config.AGENT_API_KEYS }),
      ttlMs: config.STREAM_TOKEN_TTL_MS,
    }),
    tools,
    shellSandbox,
    workspaceRealRoot,
    modelProblem: options.model ? null : modelNotConfiguredReason(config.model),
    sseHeartbeatMs: options.sseHeartbeatMs ?? 15_000,
  };
}

/** What a start request leaves out, from the configuration. */
const runDefaultsOf = (config: Config): RunDefaults => ({
  maxTurns: config.DEFAULT_MAX_TURNS,
  loopRepeatLimit: config.LOOP_REPEAT_LIMIT,
  maxTokens: config.DEFAULT_MAX_TOKENS,
  maxDurationMs: config.DEFAULT_MAX_DURATION_MS,
  maxToolCalls: config.DEFAULT_MAX_TOOL_CALLS,
});

/**
 * Settles the runs a previous process left live (resumed or aborted, per ON_RESTART), then,
 * over a shared database, keeps renewing this instance's leases and reaping runs whose lease
 * expired (see RunOwnership). Called once the server listens: a server that fails to start
 * never resumes a run. Requests that arrive meanwhile see the runs as stored (unfinished:
 * their sessions are busy). A shutdown meanwhile leaves the runs not yet resumed for the next
 * start, and nothing is started after it.
 */
export async function recoverLeftRuns(ctx: AppContext): Promise<void> {
  const recovery = ctx.manager.ownership.recoverAtStart();
  ctx.manager.recovering(recovery);
  await recovery;
  // Shutdown began meanwhile: neither the reaper nor the webhook sender is started (it stops them).
  if (!ctx.manager.accepting) return;
  ctx.manager.ownership.start();
  // Deliveries left in the outbox by the previous process are sent from here on.
  ctx.webhooks.start();
}
