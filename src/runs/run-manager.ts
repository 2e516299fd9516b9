import type { Logger } from "pino";
import type { ToolCallDecision } from "../agent/approval.js";
import type { ModelClient } from "../agent/model.js";
import type { AnyAgentTool } from "../agent/tool.js";
import type { ApprovalCeiling } from "../domain/approval-ceiling.js";
import type { RunView } from "../domain/run.js";
import type { WebhookTarget } from "../domain/webhook.js";
import { notFound, shuttingDown } from "../errors.js";
import { newId } from "../ids.js";
import { runView } from "../store/runs.js";
import type { RunRecord, SessionRecord, Store, ToolCallRecord } from "../store/store.js";
import { admitRun, type StartRunInput } from "./admission.js";
import { applyStoredRequests, cancelRun, decideApproval } from "./control.js";
import type { EventHub } from "./event-hub.js";
import { type ExecuteParams, executeRun } from "./execution.js";
import { LiveRun } from "./live-run.js";
import { type InstanceIdentity, RunOwnership } from "./ownership.js";
import { RunRecorder } from "./recorder.js";
import type { RestartMode } from "./recovery.js";
import { LiveRuns } from "./registry.js";
import { planOfRun } from "./run-plan.js";
import { stopLiveRuns } from "./shutdown.js";

export type { StartRunInput } from "./admission.js";

export interface RunManagerDeps {
  store: Store;
  hub: EventHub;
  model: ModelClient;
  defaultModel?: string;
  /** The tools a session's runs may use, bound to its workspace. */
  toolsFor: (session: SessionRecord) => AnyAgentTool[];
  maxConcurrentRuns: number;
  /** Live runs one owner (API key) may have at once; 0 or absent: no such limit. */
  maxRunsPerKey?: number;
  approvalTimeoutMs: number;
  /** APPROVAL_POLICY_MAX; absent: no ceiling. */
  approvalCeiling?: ApprovalCeiling;
  /** Tool calls of one model reply that are executed (MAX_TOOL_CALLS_PER_TURN). */
  maxToolCallsPerTurn?: number;
  /** How long a run's end may fail to be stored before it is reported anyway (default 5 s). */
  finishReportMs?: number;
  /** WEBHOOK_URL's target: where a run posts when neither it nor its session names one. */
  defaultWebhook?: WebhookTarget | null;
  /** This process as the owner of the runs it executes (see RunOwnership); default: a fresh id, 30 s leases. */
  instance?: InstanceIdentity;
  /** How runs left by a lost or stopped process are taken up (ON_RESTART); default `resume`. */
  onRestart?: RestartMode;
  /**
   * Resolves once a run another instance executes has finished (see waitForRelayedEnd);
   * absent (one process over the database): a run not executed here is not waited for.
   */
  waitElsewhere?: (runId: string) => Promise<void>;
  logger: Logger;
}

/**
 * The runs of this process, as one object: admission, the registry of live runs,
 * execution, control (cancel, decide), and shutdown, each in its own module.
 */
export class RunManager {
  readonly #registry = new LiveRuns();
  #accepting = true;
  /** Settles once start-up recovery has registered the runs a previous process left. */
  #recovery: Promise<unknown> = Promise.resolve();
  readonly instance: InstanceIdentity;
  /** Leases of the runs executed here, and the reaper that takes over runs of lost instances. */
  readonly ownership: RunOwnership;

  constructor(private readonly deps: RunManagerDeps) {
    this.instance = deps.instance ?? { id: newId("inst"), leaseMs: 30_000 };
    this.ownership = new RunOwnership({
      store: deps.store,
      hub: deps.hub,
      manager: this,
      mode: deps.onRestart ?? "resume",
      logger: deps.logger,
      instance: this.instance,
      liveRuns: () => this.#registry.values(),
      freeSlots: () => (this.#accepting ? deps.maxConcurrentRuns - this.#registry.size : 0),
    });
  }

  /** False once shutdown began: no new run (or session) is taken, and readiness says so. */
  get accepting(): boolean {
    return this.#accepting;
  }

  /** Whether this process executes the run now. */
  executes(runId: string): boolean {
    return this.#registry.get(runId) !== undefined;
  }

  get liveCount(): number {
    return this.#registry.size;
  }

  async activeRunId(sessionId: string): Promise<string | null> {
    return (await this.deps.store.runs.active(sessionId))?.id ?? null;
  }

  /**
   * Starts a run, or returns the run an earlier request with the same idempotency key started.
   * Resolves once the run's input is committed (or the run ended before it was).
   */
  async start(params: StartRunInput): Promise<{ run: RunView; created: boolean }> {
    const admission = await admitRun(
      {
        ...this.deps,
        registry: this.#registry,
        accepting: () => this.#accepting,
        lease: { owner: this.instance.id, ttlMs: this.instance.leaseMs },
      },
      params,
    );
    if (!admission.created) return admission;
    const { record, events } = admission;
    this.deps.hub.publish(record.id, events);
    let recorder: RunRecorder;
    try {
      recorder = await RunRecorder.open({
        ...this.deps,
        runId: record.id,
        sessionId: record.sessionId,
        lastEvent: 1,
        lease: { runId: record.id, owner: this.instance.id, epoch: 1 },
      });
    } finally {
      admission.release();
    }
    const live = new LiveRun(record, params.session, recorder);
    let inputSettled!: () => void;
    const input = new Promise<void>((resolve) => {
      inputSettled = resolve;
    });
    this.#launch(live, { input: params.input, onInputSettled: inputSettled });
    await Promise.race([input, live.done.catch(() => {})]);
    return { run: runView(record), created: true };
  }

  /** Continues a run the previous process left unfinished (see recovery). */
  async resume({
    record,
    session,
    recorder,
    restartInput,
  }: {
    record: RunRecord;
    session: SessionRecord;
    recorder: RunRecorder;
    restartInput: boolean;
  }): Promise<void> {
    const live = new LiveRun(record, session, recorder);
    live.resumed = true;
    const priorStep = restartInput ? undefined : (await this.deps.store.steps.ofRun(record.id)).at(-1);
    this.#launch(live, { input: restartInput ? record.input : undefined, priorStats: record.stats, priorStep });
  }

  /** A run as stored; one whose end is known but not yet stored, with that end. */
  async get(runId: string): Promise<RunView | null> {
    const live = this.#registry.get(runId);
    if (live?.phase.name === "ending") return live.phase.view;
    const record = await this.deps.store.runs.get(runId);
    return record ? runView(record, await planOfRun(this.deps.store, record)) : null;
  }

  /** Resolves with the run once it has finished (at once if it already has). */
  async waitForFinish(runId: string): Promise<RunView> {
    const live = this.#registry.get(runId);
    let view = live ? await Promise.race([live.ended, live.done]) : await this.get(runId);
    if (!view) throw notFound("run", runId);
    if (!live && view.status !== "finished" && this.#accepting && this.deps.waitElsewhere) {
      await this.deps.waitElsewhere(runId);
      view = await this.get(runId);
      if (!view) throw notFound("run", runId);
    }
    // Left unfinished for the restart: it has no end to report yet.
    if (!this.#accepting && view.status !== "finished") throw shuttingDown();
    return view;
  }

  /** Fires the run's AbortSignal. `accepted` is false for a run that had already finished. */
  cancel(runId: string): Promise<{ run: RunView; accepted: boolean }> {
    return cancelRun(this.#controlDeps(), runId);
  }

  /**
   * Start-up recovery is under way until `recovery` settles: a decision for a run not yet
   * registered waits for it, so it reaches the resumed run instead of being refused.
   */
  recovering(recovery: Promise<unknown>): void {
    this.#recovery = recovery.catch(() => {});
  }

  /** Answers a pending approval. The same decision again is answered again; a different one conflicts. */
  async decide(params: {
    runId: string;
    toolCallId: string;
    decision: ToolCallDecision["decision"];
    reason?: string | null;
  }): Promise<ToolCallRecord> {
    if (!this.#registry.get(params.runId)) await this.#recovery;
    return decideApproval(this.#controlDeps(), params);
  }

  /**
   * Acts on the cancel requests and decisions other instances stored for the runs executing
   * here (`runId`: that run only, if it executes here).
   */
  applyStoredRequests(runId?: string): Promise<void> {
    const live = runId === undefined ? this.#registry.values() : [this.#registry.get(runId)];
    return applyStoredRequests(
      this.deps.store,
      live.filter((run) => run !== undefined),
    );
  }

  /**
   * Stops accepting runs and stops the live ones within `graceMs` (see stopLiveRuns), then
   * gives up their leases, so that over a shared database a peer resumes them at once.
   */
  async shutdown({ graceMs, resume = false }: { graceMs: number; resume?: boolean }): Promise<void> {
    this.#accepting = false;
    this.ownership.stop();
    await stopLiveRuns(this.#registry, { graceMs, resume });
    const released = await this.ownership.release().catch((err) => {
      this.deps.logger.warn({ err }, "could not give up the leases of the stopped runs; they expire instead");
      return 0;
    });
    if (released) this.deps.logger.info({ released }, "gave up the leases of the stopped runs");
  }

  #controlDeps() {
    return {
      store: this.deps.store,
      registry: this.#registry,
      accepting: () => this.#accepting,
      get: (runId: string) => this.get(runId),
    };
  }

  #launch(live: LiveRun, params: ExecuteParams): void {
    this.#registry.add(live);
    const deps = {
      ...this.deps,
      finishReportMs: this.deps.finishReportMs ?? 5000,
      accepting: () => this.#accepting,
    };
    live.done = executeRun(deps, live, params).finally(() => {
      live.recorder.dispose();
      this.#registry.remove(live);
    });
    // Waiters get the outcome; a run nobody waits for must not become an unhandled rejection.
    live.done.catch((err) => this.deps.logger.error({ err, runId: live.id }, "the run could not be finished"));
  }
}
