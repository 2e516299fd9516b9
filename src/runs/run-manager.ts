import type { Logger } from "pino";
import type { ToolCallDecision } from "../agent/approval.js";
import type { LoopEvent } from "../agent/events.js";
import type { AgentMessage } from "../agent/messages.js";
import type { ModelClient } from "../agent/model.js";
import { type AgentRunResult, runAgent } from "../agent/run-agent.js";
import type { RunView } from "../agent/run-view.js";
import { emptyStats, type RunStats } from "../agent/stats.js";
import type { StepTrace } from "../agent/step-trace.js";
import type { AnyAgentTool } from "../agent/tool.js";
import { abortedOutcome, notExecutedOutcome, resultLostOutcome } from "../agent/tool-results.js";
import { conflict, notFound, sessionBusy, shuttingDown, tooManyRuns } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { newId } from "../ids.js";
import { toAgentMessage } from "../store/messages.js";
import { type RunRecord, runView } from "../store/runs.js";
import type { SessionRecord } from "../store/sessions.js";
import type { Store } from "../store/store.js";
import type { ToolCallRecord } from "../store/tool-calls.js";
import { type ApprovalGateDeps, approvalGate, resolveApproval } from "./approval-gate.js";
import type { ApprovalPolicy } from "./approval-policy.js";
import { closeOpenCalls } from "./close-open-calls.js";
import type { EventHub } from "./event-hub.js";
import { differingFields } from "./idempotency.js";
import { LiveRun } from "./live-run.js";
import { RunRecorder } from "./run-recorder.js";

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
  logger: Logger;
}

export interface StartRunInput {
  session: SessionRecord;
  input: string;
  maxTurns: number;
  contextMaxChars?: number;
  approval?: ApprovalPolicy;
  idempotencyKey?: string;
}

/** How often a run whose end could not be written tries again. */
const FINISH_RETRY_MS = 1000;
/** After the grace period, how long runs stopped then get to unwind before the server closes. */
const LATE_STOP_MS = 1000;

/** Waits for the promises to settle, at most `ms`. */
async function settledWithin(promises: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/** What a run starts from: its input (a new run) or its stats and last step (a resumed one). */
interface ExecuteParams {
  input?: string;
  priorStats?: RunStats;
  priorStep?: StepTrace;
}

/**
 * Owns the runs this process executes: starts the loop for each, glues it to the
 * store (commits), the event hub (watchers) and pending approvals, cancels, and
 * writes each run's end. One active run per session.
 */
export class RunManager {
  readonly #live = new Map<string, LiveRun>();
  readonly #bySession = new Map<string, LiveRun>();
  readonly #approvalDeps: ApprovalGateDeps;
  #accepting = true;

  /** False once shutdown began: no new run (or session) is taken, and readiness says so. */
  get accepting(): boolean {
    return this.#accepting;
  }

  constructor(private readonly deps: RunManagerDeps) {
    this.#approvalDeps = {
      store: deps.store,
      approvalTimeoutMs: deps.approvalTimeoutMs,
      setStatus: (run, status) => this.#setStatus(run, status),
    };
  }

  get liveCount(): number {
    return this.#live.size;
  }

  activeRunId(sessionId: string): string | null {
    return this.#bySession.get(sessionId)?.id ?? this.deps.store.runs.active(sessionId)?.id ?? null;
  }

  /** Starts a run, or returns the run an earlier request with the same idempotency key started. */
  start(params: StartRunInput): { run: RunView; created: boolean } {
    const { store } = this.deps;
    const { session } = params;
    if (params.idempotencyKey) {
      const existing = store.runs.byIdempotencyKey(session.id, params.idempotencyKey);
      if (existing) {
        const differs = differingFields(existing, params);
        if (differs.length) {
          throw conflict(
            "IDEMPOTENCY_KEY_REUSED",
            `this Idempotency-Key was used for a run started with a different ${differs.join(", ")}`,
            { runId: existing.id, differs },
          );
        }
        return { run: runView(existing), created: false };
      }
    }
    if (!this.#accepting) throw shuttingDown();
    const active = this.activeRunId(session.id);
    if (active) throw sessionBusy(session.id, active);
    if (this.#live.size >= this.deps.maxConcurrentRuns) throw tooManyRuns(this.deps.maxConcurrentRuns, 1);
    const perKey = this.deps.maxRunsPerKey ?? 0;
    if (perKey > 0 && session.owner !== null && this.#liveRunsOf(session.owner) >= perKey) {
      throw tooManyRuns(perKey, 1, "key");
    }

    const record: RunRecord = {
      id: newId("run"),
      sessionId: session.id,
      status: "running",
      stopReason: null,
      error: null,
      input: params.input,
      maxTurns: params.maxTurns,
      contextMaxChars: params.contextMaxChars ?? null,
      stats: emptyStats(),
      createdAt: new Date().toISOString(),
      finishedAt: null,
      approval: params.approval ?? null,
      idempotencyKey: params.idempotencyKey ?? null,
    };
    const recorder = new RunRecorder(store, this.deps.hub, record.id, session.id);
    recorder.write(() => {
      store.runs.insert(record);
      return [{ type: "run.started" }];
    });
    this.#launch(new LiveRun(record, session, recorder), { input: params.input });
    return { run: runView(record), created: true };
  }

  /** Continues a run the previous process left unfinished (see recovery). */
  resume(record: RunRecord, session: SessionRecord, priorStats: RunStats, restartInput: boolean): void {
    const recorder = new RunRecorder(this.deps.store, this.deps.hub, record.id, session.id);
    const live = new LiveRun(record, session, recorder);
    live.resumed = true;
    // GET /runs/{id} shows the counts so far, not zeros, until the next step.
    live.stats = priorStats;
    this.#launch(live, {
      input: restartInput ? record.input : undefined,
      priorStats,
      priorStep: restartInput ? undefined : this.deps.store.steps.ofRun(record.id).at(-1),
    });
  }

  /** A run as stored; a live run's stats are its latest, kept in memory. */
  get(runId: string): RunView | null {
    const record = this.deps.store.runs.get(runId);
    if (!record) return null;
    const live = this.#live.get(runId);
    return runView(live?.stats && record.status !== "finished" ? { ...record, stats: live.stats } : record);
  }

  /** Resolves with the run once it has finished (at once if it already has). */
  async waitForFinish(runId: string): Promise<RunView> {
    const live = this.#live.get(runId);
    const view = live ? await live.done : this.get(runId);
    if (!view) throw notFound("run", runId);
    // Left unfinished for the restart: it has no end to report yet.
    if (!this.#accepting && view.status !== "finished") throw shuttingDown();
    return view;
  }

  /** Fires the run's AbortSignal. `accepted` is false for a run that had already finished. */
  cancel(runId: string): { run: RunView; accepted: boolean } {
    const view = this.get(runId);
    if (!view) throw notFound("run", runId);
    if (view.status === "finished") return { run: view, accepted: false };
    const live = this.#live.get(runId);
    if (live && !live.cancelRequested) {
      this.#setStatus(live, "cancelling");
      failpoint("after-cancel-request");
      live.cancel("cancelled by request");
    } else if (!live) {
      // Unfinished but not executing here (left for the restart during a shutdown): the
      // recorded request makes the restart end it aborted.
      this.deps.store.runs.setStatus(runId, "cancelling");
    }
    return { run: this.get(runId) ?? view, accepted: true };
  }

  /** Answers a pending approval. The same decision again is answered again; a different one conflicts. */
  decide(params: {
    runId: string;
    toolCallId: string;
    decision: ToolCallDecision["decision"];
    reason?: string | null;
  }): ToolCallRecord {
    const { store } = this.deps;
    const { runId, toolCallId, decision } = params;
    const view = this.get(runId);
    if (!view) throw notFound("run", runId);
    const call = store.toolCalls.get(runId, toolCallId);
    if (!call || call.approvalReason === null) throw notFound("approval", toolCallId);
    if (call.decision) {
      if (call.decision === decision) return call;
      throw conflict("APPROVAL_CONFLICT", `tool call ${toolCallId} was already decided: ${call.decision}`, {
        decision: call.decision,
      });
    }
    if (view.status === "finished") throw conflict("RUN_FINISHED", `run ${runId} has finished`);
    const live = this.#live.get(runId);
    // A run left for the restart asks for this decision again there.
    if (!this.#accepting && (!live || live.stopped)) throw shuttingDown();
    if (!live?.approvals.has(toolCallId)) {
      throw conflict(
        "APPROVAL_NOT_PENDING",
        `tool call ${toolCallId} is not waiting for a decision (run is ${view.status})`,
      );
    }
    resolveApproval(this.#approvalDeps, live, toolCallId, decision, params.reason ?? null);
    return store.toolCalls.get(runId, toolCallId) as ToolCallRecord;
  }

  /**
   * Stops accepting runs and waits up to `graceMs` for the live ones to stop. With `resume`
   * (ON_RESTART=resume) each run is suspended: left as its last commit has it, for the next
   * start to resume (a pending approval is still pending then). Otherwise each is cancelled
   * and ends `aborted`. A run already being cancelled is cancelled either way.
   */
  async shutdown({ graceMs, resume = false }: { graceMs: number; resume?: boolean }): Promise<void> {
    this.#accepting = false;
    const done = [...this.#live.values()].map((live) => {
      if (resume && !live.cancelRequested) live.suspend();
      else if (!live.cancelRequested) live.cancel("the server is shutting down");
      return live.done;
    });
    await settledWithin(done, graceMs);
    // A tool that outlasted the grace period is stopped now (its process group is signalled)
    // and left for the restart, which records it as interrupted.
    const late = [...this.#live.values()].filter((live) => live.suspended && !live.stopped);
    for (const live of late) live.stop();
    if (late.length)
      await settledWithin(
        late.map((live) => live.done),
        LATE_STOP_MS,
      );
  }

  #launch(live: LiveRun, params: ExecuteParams): void {
    this.#live.set(live.id, live);
    this.#bySession.set(live.sessionId, live);
    live.done = this.#execute(live, params).finally(() => {
      live.recorder.dispose();
      this.#live.delete(live.id);
      if (this.#bySession.get(live.sessionId) === live) this.#bySession.delete(live.sessionId);
    });
    // Waiters get the outcome; a run nobody waits for must not become an unhandled rejection.
    live.done.catch((err) => this.deps.logger.error({ err, runId: live.id }, "the run could not be finished"));
  }

  async #execute(live: LiveRun, params: ExecuteParams): Promise<RunView> {
    const { store, logger } = this.deps;
    const log = logger.child({ runId: live.id, sessionId: live.sessionId });
    log.info({ resumed: live.resumed === true }, "run started");
    let result: Pick<AgentRunResult, "stopReason" | "error" | "stats">;
    try {
      result = await runAgent({
        model: this.deps.model,
        modelName: live.session.model ?? this.deps.defaultModel,
        system: live.session.system ?? undefined,
        tools: this.deps.toolsFor(live.session),
        history: store.messages.history(live.sessionId).map(toAgentMessage),
        input: params.input,
        beforeToolCall: approvalGate(this.#approvalDeps, live),
        commit: async (message) => this.#commit(live, message),
        emit: (event) => this.#emit(live, event),
        onStep: (step, stats) => this.#saveStep(live, step, stats),
        signal: live.controller.signal,
        maxTurns: live.record.maxTurns,
        contextMaxChars: live.record.contextMaxChars ?? undefined,
        priorStats: params.priorStats,
        priorStep: params.priorStep,
        newId: () => newId("msg"),
      });
    } catch (err) {
      if (live.stopped) return this.#suspendedView(live);
      log.error({ err }, "run failed");
      const code = (err as { code?: unknown }).code;
      result = {
        stopReason: "error",
        error: { code: typeof code === "string" ? code : "INTERNAL", message: (err as Error).message },
        stats: params.priorStats ?? emptyStats(),
      };
    }
    if (live.stopped) return this.#suspendedView(live);
    if (result.stopReason === "error") log.warn({ error: result.error }, "run ended with an error");
    const finished = await this.#finish(live, result);
    if (finished.status === "finished")
      log.info({ stopReason: finished.stopReason, stats: finished.stats }, "run finished");
    return finished;
  }

  #commit(live: LiveRun, message: AgentMessage): void {
    const { toolCalls } = this.deps.store;
    live.recorder.commitMessage(message, (stored) => {
      if (stored.role === "assistant" && stored.toolCalls?.length) {
        toolCalls.propose(live.id, stored.toolCalls, stored.createdAt);
      } else if (stored.role === "tool") {
        toolCalls.finish(live.id, stored.toolCallId, stored.id, stored.createdAt);
      }
    });
    if (message.role === "assistant" && message.toolCalls?.length) failpoint("after-assistant-commit");
    if (message.role === "tool") {
      failpoint("after-tool-result-commit");
      live.toolFinished(message.toolCallId);
    }
  }

  #emit(live: LiveRun, event: LoopEvent): void {
    if (event.type === "turn.started" || event.type === "tool.started") live.beforeNewWork();
    if (event.type !== "tool.started") {
      live.recorder.buffer(event);
      return;
    }
    // Durable before the tool runs: after a crash the ledger says it had started.
    live.recorder.write(() => {
      this.deps.store.toolCalls.start(live.id, event.toolCallId, new Date().toISOString());
      return [event];
    });
    live.runningTool = event.toolCallId;
  }

  /** The step trace goes out with the run's next write; the stats so far stay in memory. */
  #saveStep(live: LiveRun, step: StepTrace, stats: RunStats): void {
    live.stats = stats;
    live.recorder.defer(() => this.deps.store.steps.save(live.id, step));
  }

  /** How many runs of this owner (API key hash) this process is executing. */
  #liveRunsOf(owner: string): number {
    let count = 0;
    for (const live of this.#live.values()) if (live.session.owner === owner) count++;
    return count;
  }

  /** A suspended run as this process leaves it: unfinished, for the next start. */
  #suspendedView(live: LiveRun): RunView {
    return this.get(live.id) ?? runView(live.record);
  }

  #setStatus(live: LiveRun, status: LiveRun["status"]): void {
    // A stopped run writes nothing, but a cancel is recorded: the restart then ends it aborted.
    if (live.stopped && status !== "cancelling") return;
    if (live.status === "cancelling" && status !== "cancelling") return;
    live.status = status;
    try {
      this.deps.store.runs.setStatus(live.id, status);
    } catch (err) {
      this.deps.logger.warn({ err, runId: live.id }, "could not record the run's status");
    }
  }

  /**
   * Writes the run's end: first a result for every call still open (a write that failed
   * mid-turn leaves some), then the run's state and its `run.finished` event together.
   * Retries while writes fail; a DELETE that arrives meanwhile still ends it `aborted`.
   */
  async #finish(live: LiveRun, result: Pick<AgentRunResult, "stopReason" | "error" | "stats">): Promise<RunView> {
    const { store } = this.deps;
    for (let attempt = 0; ; attempt++) {
      if (live.stopped) return this.#suspendedView(live);
      const stopReason = live.cancelRequested ? "aborted" : result.stopReason;
      const error = stopReason === "error" ? result.error : null;
      try {
        closeOpenCalls({
          store,
          recorder: live.recorder,
          outcomeFor: (call) =>
            call.state === "started"
              ? resultLostOutcome()
              : stopReason === "aborted"
                ? abortedOutcome()
                : notExecutedOutcome(),
        });
        const finishedAt = new Date().toISOString();
        let view: RunView | null = null;
        live.recorder.write(() => {
          store.runs.finish(live.id, { stopReason, error, stats: result.stats, finishedAt });
          view = this.get(live.id);
          return view ? [{ type: "run.finished", run: view }] : [];
        });
        // The row is gone only if its session was deleted underneath; report the end anyway.
        return (
          view ?? { ...runView(live.record), status: "finished", stopReason, error, stats: result.stats, finishedAt }
        );
      } catch (err) {
        if (attempt === 0)
          this.deps.logger.error({ err, runId: live.id }, "could not record the end of the run; retrying");
        if (!this.#accepting && attempt > 2) throw err;
        await new Promise((resolve) => setTimeout(resolve, FINISH_RETRY_MS));
      }
    }
  }
}
