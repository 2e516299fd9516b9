import type { ToolCallDecision } from "../agent/approval.js";
import type { Deadline } from "../deadline.js";
import type { RunView } from "../domain/run.js";
import { newId } from "../ids.js";
import type { ToolCallStatus } from "../store/store.js";
import { repeatedStart, type StartRunInput } from "./admission.js";
import { applyStoredRequests, cancelRun, decideApproval } from "./control.js";
import { enqueueRun } from "./enqueue.js";
import { type ExecuteParams, executeRun } from "./execution.js";
import { HistoryTail, type SessionHistory } from "./history-tail.js";
import { interruptAndStart } from "./interrupt.js";
import { LiveRun, withLiveDuration } from "./live-run.js";
import { type InstanceIdentity, RunOwnership } from "./ownership.js";
import { QueuedStarts } from "./queued-starts.js";
import { queueInputsLeftBy, startQueues } from "./recovery.js";
import { LiveRuns, type SlotHandover } from "./registry.js";
import type { ResumeParams, RunManagerDeps, StartedRun } from "./run-manager-deps.js";
import { storedRunView } from "./run-plan.js";
import { stopForShutdown, stopLiveRuns } from "./shutdown.js";
import { startNow } from "./start-now.js";
import { repeatsSteer, steerOrStart } from "./steer.js";
import { waitForRunEnd } from "./wait-for-end.js";

export type { StartRunInput } from "./admission.js";
export type { ResumeParams, RunManagerDeps, StartedRun } from "./run-manager-deps.js";

/**
 * The runs of this process, as one object: admission, the registry of live runs,
 * execution, control (cancel, decide), and shutdown, each in its own module.
 */
export class RunManager {
  // A slot given back goes to the runs start-up recovery holds for one, then to the queues that waited for room.
  readonly #registry = new LiveRuns(() => {
    this.ownership.held.slotFreed();
    this.#queuedStarts.slotFreed();
  });
  /** Aborted when shutdown begins: from then on nothing new is accepted. */
  readonly #stopping = new AbortController();
  /** How shutdown stops runs (see stopForShutdown); null until it begins. */
  #shutdownMode: { resume: boolean } | null = null;
  /** Settles once start-up recovery has registered the runs a previous process left. */
  #recovery: Promise<unknown> = Promise.resolve();
  readonly #queuedStarts: QueuedStarts;
  readonly instance: InstanceIdentity;
  /** Leases of the runs executed here, and the reaper that takes over runs of lost instances. */
  readonly ownership: RunOwnership;
  /** The histories of sessions that ran here lately (see HistoryTail). */
  readonly history: HistoryTail;
  /** What the gauges read at scrape time: the runs executed here now, and the calls they wait on a decision for. */
  readonly executed: Pick<LiveRuns, "executing" | "approvalsPending"> = this.#registry;

  constructor(private readonly deps: RunManagerDeps) {
    this.instance = deps.instance ?? { id: newId("inst"), leaseMs: 30_000 };
    this.history = new HistoryTail(deps.store);
    this.ownership = new RunOwnership({
      store: deps.store,
      hub: deps.hub,
      manager: this,
      mode: deps.onRestart ?? "resume",
      logger: deps.logger,
      instance: this.instance,
      liveRuns: () => this.#registry.values(),
      freeSlots: () => this.#freeSlots(),
      reserve: () => this.#registry.reserve(),
      claimBeside: (claim) => this.#registry.claimBeside(claim),
    });
    this.#queuedStarts = new QueuedStarts({
      ...deps,
      lease: { owner: this.instance.id, ttlMs: this.instance.leaseMs },
      registry: this.#registry,
      hasRoom: () => this.hasRoom,
      execute: (live) => this.#execute(live),
      startWaiting: () => startQueues({ store: deps.store, manager: this }),
    });
  }

  /** False once shutdown began: no new run (or session) is taken, and readiness says so. */
  get accepting(): boolean {
    return !this.#stopping.signal.aborted;
  }

  /** Whether this process executes the run now. */
  executes(runId: string): boolean {
    return this.#registry.get(runId) !== undefined;
  }

  /** Slots taken (see LiveRuns.size): runs executed here plus starts still writing theirs. */
  get liveCount(): number {
    return this.#registry.size;
  }

  /** Whether this process may take on one more run now (accepting, and under MAX_CONCURRENT_RUNS). */
  get hasRoom(): boolean {
    return this.#freeSlots() > 0;
  }

  #freeSlots(): number {
    return this.accepting ? this.deps.maxConcurrentRuns - this.#registry.size : 0;
  }

  async activeRunId(sessionId: string): Promise<string | null> {
    return (await this.deps.store.runs.active(sessionId))?.id ?? null;
  }

  /**
   * Starts a run (or returns the one an earlier request with the same idempotency key started),
   * resolving once its input is committed. On a busy session `ifBusy` decides: `reject` (409),
   * `enqueue` (queued, started when the runs ahead end), `interrupt` (the active run cancelled
   * first) or `steer` (the input joins the active run, or starts a new one if that run ends first).
   */
  async start(params: StartRunInput): Promise<StartedRun> {
    // A start under the key of a steer is that steer repeated: answered as it is, its input run once.
    if (params.ifBusy !== "steer" && (await repeatsSteer(this.deps.store, params)))
      return this.start({ ...params, ifBusy: "steer" });
    switch (params.ifBusy ?? "reject") {
      case "reject":
        return this.#startNow(params);
      case "enqueue":
        return this.#enqueue(params);
      case "interrupt":
        return interruptAndStart<StartedRun>(this.#controlDeps(), {
          sessionId: params.session.id,
          idempotencyKey: params.idempotencyKey,
          only: params.interrupts,
          repeated: () => repeatedStart({ store: this.deps.store, registry: this.#registry }, params),
          start: (handover) => this.#startNow(params, handover),
          startQueue: () => this.#startNext(params.session.id),
        });
      case "steer": {
        const start = (takesInput: string | undefined) => this.#enqueue({ ...params, takesInput });
        return steerOrStart({ ...this.#controlDeps(), defaultWebhook: this.deps.defaultWebhook }, params, start);
      }
    }
  }

  #startNow(params: StartRunInput, handover?: SlotHandover): Promise<StartedRun> {
    const [registry, history, owner, hub] = [this.#registry, this.history, this.instance.id, this.deps.hub];
    const execute = (live: LiveRun, tail?: SessionHistory) => this.#execute(live, tail);
    return startNow({ admission: this.#admissionDeps(), hub, history, registry, owner, execute }, params, { handover });
  }

  /** See enqueueRun. */
  #enqueue(params: StartRunInput): Promise<StartedRun> {
    const [store, hub, admission] = [this.deps.store, this.deps.hub, this.#admissionDeps()];
    const startNow = (p: StartRunInput) => this.#startNow(p);
    const [startQueued, get] = [(id: string) => this.startQueued(id), (id: string) => this.get(id)];
    return enqueueRun({ store, hub, admission, startNow, startQueued, get }, params);
  }

  /** Starts the session's oldest queued run, within MAX_CONCURRENT_RUNS (see QueuedStarts). */
  startQueued(sessionId: string): Promise<LiveRun | null> {
    return this.accepting ? this.#queuedStarts.start(sessionId) : Promise.resolve(null);
  }

  /** Starts the session's queue in the background (after a run's end); failures are logged. */
  #startNext(sessionId: string): void {
    this.startQueued(sessionId).catch((err) =>
      this.deps.logger.error({ err, sessionId }, "could not start the session's next queued run"),
    );
  }

  /** Launches a new run's execution; resolves once its input is committed (or it ended first). */
  async #execute(live: LiveRun, history?: SessionHistory): Promise<void> {
    const input = new Promise<void>((resolve) =>
      this.#launch(live, { input: live.record.input, onInputSettled: resolve, history }),
    );
    await Promise.race([input, live.done.catch(() => {})]);
  }

  /** Continues a run left unfinished (see recovery); once shutdown began, not (false: left for the next start). */
  resume({ record, session, recorder, restartInput, priorStep, heldSince }: ResumeParams): boolean {
    if (!this.accepting) return false;
    const live = new LiveRun(record, session, recorder, heldSince);
    live.resumed = true;
    this.#launch(live, { input: restartInput ? record.input : undefined, priorStats: record.stats, priorStep });
    return true;
  }

  /** The run as stored (see withLiveDuration), or an end reported unstored; `decided`: also an end being written. */
  async get(runId: string, { decided = false }: { decided?: boolean } = {}) {
    const ending = this.#registry.ending(runId, { decided });
    const stored = ending ? null : await storedRunView({ store: this.deps.store, runId });
    return ending ?? withLiveDuration(stored, this.#registry.get(runId));
  }

  /** The run once it has finished (at once if it already has), unless `gone` aborts first: see waitForRunEnd. */
  waitForFinish(runId: string, gone?: AbortSignal): Promise<RunView> {
    const { store, hub, waitElsewhere } = this.deps;
    const [registry, stopping, get] = [this.#registry, this.#stopping.signal, (id: string) => this.get(id)];
    const live = registry.get(runId);
    return waitForRunEnd({ runId, live, get, stopping, store, hub, waitElsewhere, registry, gone });
  }

  /**
   * Fires the run's AbortSignal, cancelled `by` whom (see cancelRun; default: a DELETE /runs/{id}). `accepted`
   * is false for a run already finished (one not registered here waits for recovery: ControlDeps.recovered).
   */
  cancel(runId: string, by?: string): Promise<{ run: RunView; accepted: boolean }> {
    return cancelRun(this.#controlDeps(), runId, by);
  }

  /**
   * Start-up recovery is under way until `recovery` settles: a decision or a cancel for a run not yet
   * registered waits for it (and for its own recovery if held for a slot: HeldLeftRuns), to reach the run.
   */
  recovering(recovery: Promise<unknown>): void {
    this.#recovery = recovery.catch(() => {});
  }

  async #recovered(runId: string): Promise<void> {
    await this.#recovery;
    await this.ownership.held.recovering(runId);
  }

  /** Answers a pending approval. The same decision again is answered again; a different one conflicts. */
  async decide(params: {
    runId: string;
    toolCallId: string;
    decision: ToolCallDecision["decision"];
    reason?: string | null;
  }): Promise<ToolCallStatus> {
    if (!this.#registry.get(params.runId)) await this.#recovered(params.runId);
    return decideApproval(this.#controlDeps(), params);
  }

  /**
   * Acts on the cancel requests and decisions other instances stored for the runs executing
   * here (`runId`: that run only, if it executes here).
   */
  applyStoredRequests(runId?: string): Promise<void> {
    const live = runId === undefined ? this.#registry.values() : [this.#registry.get(runId)];
    const runs = live.filter((run) => run !== undefined);
    return applyStoredRequests(this.deps.store, runs);
  }

  /**
   * Stops accepting runs, stops the live ones within `graceMs` (and `closeBy`: see stopLiveRuns),
   * then gives up their leases, so that over a shared database a peer resumes them at once.
   */
  async shutdown({ graceMs, resume = false, closeBy }: { graceMs: number; resume?: boolean; closeBy?: Deadline }) {
    this.#shutdownMode = { resume };
    this.#stopping.abort();
    this.ownership.stop();
    await stopLiveRuns(this.#registry, { graceMs, resume, closeBy });
    await this.ownership.release();
  }

  #admissionDeps() {
    return {
      ...this.deps,
      registry: this.#registry,
      accepting: () => this.accepting,
      lease: { owner: this.instance.id, ttlMs: this.instance.leaseMs },
    };
  }

  #controlDeps() {
    return {
      store: this.deps.store,
      hub: this.deps.hub,
      registry: this.#registry,
      accepting: () => this.accepting,
      approvalTimeoutMs: this.deps.approvalTimeoutMs,
      get: (runId: string) => this.get(runId, { decided: true }),
      recovered: (runId: string) => this.#recovered(runId),
      cancelHeld: (runId: string, by: string) => this.ownership.held.cancel(runId, by),
      maxConcurrentRuns: this.deps.maxConcurrentRuns,
      startQueue: (sessionId: string) => this.#startNext(sessionId),
    };
  }

  #launch(live: LiveRun, params: ExecuteParams): void {
    this.#registry.add(live);
    // A start admitted before shutdown began, registered after it took its list of runs.
    if (this.#shutdownMode) stopForShutdown(live, this.#shutdownMode);
    const deps = {
      ...this.deps,
      finishReportMs: this.deps.finishReportMs ?? 5000,
      accepting: () => this.accepting,
      history: this.history,
    };
    live.done = executeRun(deps, live, params)
      .finally(() => {
        live.recorder.dispose();
        this.#registry.remove(live);
        this.deps.onLeft?.(live.id, { unfinished: live.stopped });
      })
      .then(async (view) => {
        if (view.status !== "finished") return view;
        // The one place a run executed here ends: the input it left becomes runs, the session's
        // queue goes on (unless a run took its place), and so do those waiting for a key's room.
        await queueInputsLeftBy(this.deps, live.id);
        if (!live.handedOver) this.#startNext(live.sessionId);
        this.#queuedStarts.runEnded();
        return view;
      });
    // Waiters get the outcome; a run nobody waits for must not become an unhandled rejection.
    live.done.catch((err) => this.deps.logger.error({ err, runId: live.id }, "the run could not be finished"));
  }
}
