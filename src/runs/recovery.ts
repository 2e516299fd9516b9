import type { Logger } from "pino";
import { z } from "zod";
import type { StopPoint } from "../agent/stop-detail.js";
import { abortedOutcome, interruptedOutcome } from "../agent/tool-results.js";
import type { ClaimedRun, RunRecord, Store } from "../store/store.js";
import type { EventHub } from "./event-hub.js";
import { closeOpenCalls, finishRun } from "./finish.js";
import { BY_DELETE, BY_SESSION_DELETE } from "./live-run.js";
import { queueInputsLeftOn, queueLeftInput } from "./queue.js";
import { RunRecorder } from "./recorder.js";
import type { RunManager } from "./run-manager.js";
import { abortedDetail } from "./stop-details.js";

export type RestartMode = "resume" | "abort";

export interface RecoveryReport {
  resumed: string[];
  aborted: string[];
  interruptedToolCalls: number;
  /** Queued runs started (their sessions had no active run left). */
  started: string[];
  /** Steered input left on runs that had ended, queued as new runs. */
  requeuedInputs: number;
  /** Runs to resume held for a free slot (over a SQLite file: see HeldLeftRuns). */
  held: string[];
}

export const emptyReport = (): RecoveryReport => ({
  resumed: [],
  aborted: [],
  interruptedToolCalls: 0,
  started: [],
  requeuedInputs: 0,
  held: [],
});

export interface RecoveryDeps {
  store: Store;
  hub: EventHub;
  manager: RunManager;
  mode: RestartMode;
  logger: Logger;
}

export interface RecoverOptions {
  /** When the run's lease was taken (see ResumeParams.heldSince). */
  heldSince?: number;
  /** The run is cancelled now, by whom (a DELETE of a run held for a slot): it ends `aborted`. */
  cancelledBy?: string;
}

/**
 * Whether a claimed run is to be resumed, as its record says (one whose session is gone ends
 * instead: see recoverRun). Only such a run waits for a slot (see HeldLeftRuns).
 */
export const toResume = (mode: RestartMode, run: RunRecord): boolean =>
  mode === "resume" && run.status !== "cancelling";

/** The result of an open call of a run a process left: INTERRUPTED if its tool had started, else ABORTED. */
export const leftCallOutcome = (call: { state: string }) =>
  call.state === "started" ? interruptedOutcome() : abortedOutcome();

/** A `turn.started` event read back from storage: its `turn` is the run's model requests once it began. */
const TurnStarted = z.object({ turn: z.number().int().nonnegative() });

/**
 * The record of a left run (to resume or to end) with every model request it began counted in
 * `stats.modelCalls`, and so against its `maxTurns` and in its stop detail: a request is counted in the stored stats
 * only with its turn's step, once its stream ended, but its `turn.started` event is stored
 * before or with its first events. A request cut by a crash (one the reply itself causes, at
 * every restart) is thus counted unless the crash came before any of its events was stored.
 */
async function countingCutRequests(store: Store, run: RunRecord): Promise<RunRecord> {
  const last = (await store.events.ofType(run.id, "turn.started")).at(-1);
  const began = last ? (TurnStarted.safeParse(JSON.parse(last.data)).data?.turn ?? 0) : 0;
  return began > run.stats.modelCalls ? { ...run, stats: { ...run.stats, modelCalls: began } } : run;
}

/**
 * Ends a left run `aborted` through the one finish of a run: cancelled (`cancelledBy`, or its
 * status `cancelling`), without its session, or restarted with ON_RESTART=abort. It ends with
 * the stats of `counted` (`run` with the requests it began: see countingCutRequests), and its
 * stop detail names its first call without a result, else the turn of a request that was cut,
 * else it is after its last turn.
 */
async function abortLeftRun(
  store: Store,
  recorder: RunRecorder,
  {
    run,
    counted,
    session,
    cancelledBy,
  }: { run: RunRecord; counted: RunRecord; session: boolean; cancelledBy?: string },
): Promise<void> {
  // Over a shared database the run's instance was lost (or stopped); over a file, this server restarted.
  const since = store.shared ? "the instance executing it was lost" : "the server restarted";
  // Who asked, as its request was stored (a DELETE /runs/{id} when it did not say, or cannot be read).
  const requested = async () =>
    `${(await store.runs.access(run.id).catch(() => null))?.cancelledBy ?? BY_DELETE} before ${since}`;
  const by =
    cancelledBy ??
    (run.status === "cancelling"
      ? await requested()
      : !session
        ? BY_SESSION_DELETE
        : `because ${since}, with ON_RESTART=abort`);
  const { stats } = counted;
  // Where it stopped: at its first call without a result (as a live run's detail names the
  // call it stopped at), else in the turn of a request that was cut, else after its last turn.
  const stoppedAt = (await store.toolCalls.open(run.id).catch(() => []))[0];
  const cut = stats.modelCalls > run.stats.modelCalls;
  const point: StopPoint | undefined = stoppedAt
    ? { phase: "in_turn", turn: stats.modelCalls, toolCall: { id: stoppedAt.id, tool: stoppedAt.name } }
    : cut
      ? { phase: "in_turn", turn: stats.modelCalls }
      : undefined;
  await finishRun({
    store,
    recorder,
    record: counted,
    end: { stopReason: "aborted", stopDetail: abortedDetail({ by, stats, point }), error: null, stats },
    outcomeFor: leftCallOutcome,
    retrace: true,
  });
}

/**
 * Gives each call of a left run whose tool had started but has no result its INTERRUPTED result
 * (its tool is never executed twice), under the run's claimed lease; resolves with how many. It
 * executes nothing: a run to resume gets them at once, also one held for a slot (see
 * HeldLeftRuns). The other open calls are left to the loop (awaiting approval again, or not yet
 * started) or to the run's end.
 */
export const closeInterruptedCalls = ({ store, recorder }: { store: Store; recorder: RunRecorder }) =>
  closeOpenCalls({ store, recorder, outcomeFor: leftCallOutcome, only: (call) => call.state === "started" });

/**
 * Settles one run this process has just claimed (left by a previous process, or by an
 * instance that lost its lease), from the database alone, writing under the claimed lease.
 * A call whose tool had started but has no result gets an INTERRUPTED result (it is never
 * executed twice). Then the run either resumes from its last commit, with the stats stored
 * with its last step and every model request it began counted (see countingCutRequests;
 * calls awaiting approval await it again, their timeout counted from their request), or, in
 * `abort` mode, once cancelled (its status `cancelling`, or `cancelledBy`) or without its
 * session, ends `aborted` with its requests counted alike (see abortLeftRun). A run to resume once shutdown
 * began is not executed: it is left for the next start.
 */
export async function recoverRun(
  deps: RecoveryDeps,
  { record: run, lease }: ClaimedRun,
  report: RecoveryReport,
  { heldSince, cancelledBy }: RecoverOptions = {},
) {
  const { store, hub, manager, mode } = deps;
  const recorder = await RunRecorder.open({ store, hub, runId: run.id, sessionId: run.sessionId, lease });
  const session = await store.sessions.get(run.sessionId);
  // A run a client had cancelled is never continued.
  const abort = !toResume(mode, run) || !session || cancelledBy !== undefined;
  if (abort) {
    report.interruptedToolCalls += (await store.toolCalls.inState(run.id, "started")).length;
    const counted = await countingCutRequests(store, run);
    await abortLeftRun(store, recorder, { run, counted, session: !!session, cancelledBy });
    report.aborted.push(run.id);
    report.requeuedInputs += await queueInputsLeftBy(deps, run.id);
    return;
  }
  report.interruptedToolCalls += await closeInterruptedCalls({ store, recorder });
  // Its input is its first message: a run without one starts over with it.
  const restartInput = !(await store.messages.anyOfRun(run.sessionId, run.id));
  const priorStep = restartInput ? undefined : ((await store.steps.last(run.id)) ?? undefined);
  const record = restartInput ? run : await countingCutRequests(store, run);
  const resumed = manager.resume({ record, session, recorder, restartInput, priorStep, heldSince });
  // Shutdown began meanwhile: the run is left for the next start.
  if (!resumed) return recorder.dispose();
  report.resumed.push(run.id);
}

/**
 * Queues as new runs the steered input run `runId` ended without, once it has finished, in the
 * order it was steered (see queueInputsLeftOn): whatever ends a run here calls this, before the
 * session's queue moves on, also for input a steer request still waits for (that request answers
 * with the run made of it). Never rejects: a failure is logged, and the input is queued by the
 * request that waits for it, or the next start-up (or, over a shared database, reaper pass: see
 * settleQueues). Resolves with how many inputs it queued.
 */
export async function queueInputsLeftBy(
  deps: Pick<RecoveryDeps, "store" | "hub" | "logger">,
  runId: string,
): Promise<number> {
  try {
    return await queueInputsLeftOn(deps, runId);
  } catch (err) {
    deps.logger.error({ err, runId }, "could not queue the steered input a run ended without");
    return 0;
  }
}

/**
 * Moves the queues on where nobody did (the process that ended a run ahead was lost, or
 * stopped): steered input left on ended runs is queued as new runs, and queues start (see
 * startQueues). Starting is the store's to decide, so instances doing this at once start each
 * run once.
 */
export async function settleQueues(deps: RecoveryDeps, report: RecoveryReport): Promise<void> {
  const { store, hub } = deps;
  for (const input of await store.inputs.orphaned()) {
    if (await queueLeftInput({ store, hub }, input)) report.requeuedInputs++;
  }
  report.started.push(...(await startQueues(deps)));
}

/**
 * Starts the oldest queued run of each session that has queued runs and no active run, here,
 * while this process has room (MAX_CONCURRENT_RUNS): the rest wait, for the next run to end
 * here or (over a shared database) for a peer with room. Resolves with the runs started.
 */
export async function startQueues({ store, manager }: Pick<RecoveryDeps, "store" | "manager">): Promise<string[]> {
  const started: string[] = [];
  for (const sessionId of await store.runs.queuedSessions()) {
    const live = await manager.startQueued(sessionId);
    if (live) started.push(live.id);
    // startQueued noted that queues wait for room (the next slot given back starts a pass).
    else if (!manager.hasRoom) break;
  }
  return started;
}
