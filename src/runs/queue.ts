import type { Logger } from "pino";
import { abortedOutcome } from "../agent/tool-results.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import type { RunView } from "../domain/run.js";
import type { WebhookTarget } from "../domain/webhook.js";
import { AppError } from "../errors.js";
import { isConflict } from "../store/errors.js";
import { runView } from "../store/runs.js";
import type { InputRunSettings, LeaseTerms, RunInput, RunRecord, SessionRecord, Store } from "../store/store.js";
import { newRunRecord, runLike, type StartRunInput } from "./admission.js";
import type { EventHub } from "./event-hub.js";
import { finishRun } from "./finish.js";
import { RunRecorder } from "./recorder.js";
import { persistenceFailure } from "./run-failure.js";
import { planOfRun } from "./run-plan.js";
import { abortedDetail, failedDetail } from "./stop-details.js";

export interface QueueDeps {
  store: Store;
  hub: EventHub;
}

/** What starting a queued run needs besides: the lease the starting process takes on it, and the key's limit. */
export interface StartQueueDeps extends QueueDeps {
  lease: LeaseTerms;
  /** Active runs one owner (API key) may have (MAX_RUNS_PER_KEY); 0 or absent: no such limit. */
  maxRunsPerKey?: number;
  logger: Logger;
}

/** A queued run just started: what this process needs to execute it. */
export interface StartedQueuedRun {
  record: RunRecord;
  session: SessionRecord;
  recorder: RunRecorder;
}

/**
 * Starts the session's oldest queued run when the session has no active run and its owner is
 * under MAX_RUNS_PER_KEY (the store decides: see Store.runs.startQueued) and publishes its
 * `run.started`. Returns the run for the caller to execute; null when none started (none
 * queued, the session busy or deleted). Rejects `owner_runs` (a StoreConflictError) when the
 * session's key is at its limit: the run stays queued.
 */
export async function startQueuedRun(deps: StartQueueDeps, sessionId: string): Promise<StartedQueuedRun | null> {
  const maxPerOwner = deps.maxRunsPerKey || undefined;
  const started = await deps.store.runs.startQueued(sessionId, new Date().toISOString(), deps.lease, { maxPerOwner });
  if (!started) return null;
  const { run } = started;
  deps.hub.publish(run.id, started.events);
  // Opened without a read (the session's last message is read at its first write), so that a
  // run marked running here is always either executed or ended.
  const recorder = await RunRecorder.open({
    ...deps,
    runId: run.id,
    sessionId,
    lastEvent: started.events.at(-1)?.seq,
    lastMessage: null,
    lease: started.lease,
  });
  let session: SessionRecord | null;
  try {
    session = await deps.store.sessions.get(sessionId);
  } catch (err) {
    // Nobody would execute it: it ends `error` now (if that write fails too, the next recovery ends it).
    const { error, hint } = persistenceFailure("could not start the queued run", err);
    deps.logger.error({ err, runId: run.id }, "could not start the queued run: it ends with an error");
    const stopDetail = failedDetail(error, run.stats, hint);
    const end = { stopReason: "error" as const, stopDetail, error, stats: run.stats };
    await finishRun({ store: deps.store, recorder, record: run, end, outcomeFor: abortedOutcome }).catch(() => {});
    recorder.dispose();
    throw err;
  }
  // Deleted meanwhile, with its runs: nothing is left to execute.
  if (!session) return null;
  return { record: run, session, recorder };
}

/**
 * Cancels a run still queued: it ends `aborted` without running, with its `run.finished`,
 * through the one finish of a run, provided it is still queued then. Resolves with the run as
 * it is: finished, or (started meanwhile) live, for the caller to cancel as a live run.
 */
export async function cancelQueuedRun(deps: QueueDeps, record: RunRecord, by: string): Promise<RunView> {
  const recorder = await RunRecorder.open({ ...deps, runId: record.id, sessionId: record.sessionId });
  try {
    return await finishRun({
      store: deps.store,
      recorder,
      record,
      end: {
        stopReason: "aborted",
        stopDetail: abortedDetail({ by, stats: record.stats, point: { phase: "before_turn", turn: 1 } }),
        error: null,
        stats: record.stats,
      },
      outcomeFor: abortedOutcome,
      from: "queued",
    });
  } finally {
    recorder.dispose();
  }
}

/**
 * The idempotency key of the run a left input is queued as (see queueLeftInput), by which its
 * steering request finds it: with a line break, which no request's `Idempotency-Key` can hold.
 */
export const leftInputKey = (inputId: string): string => `\nleft input ${inputId}`;

/** The id a run queued from a left input had before it was found by leftInputKey: the input's own. */
const legacyRunOfInput = (inputId: string): string => `run_${inputId.slice(inputId.indexOf("_") + 1)}`;

/**
 * The run queued from input `inputId` of session `sessionId` (see queueLeftInput), and whether
 * its input is `input` (compared in the database); null when there is none.
 */
export async function runOfLeftInput(
  store: Store,
  { sessionId, inputId, input }: { sessionId: string; inputId: string; input: string },
): Promise<{ id: string; same: boolean } | null> {
  const keyed = await store.runs.keyed(sessionId, leftInputKey(inputId), input);
  if (keyed) return { id: keyed.id, same: keyed.sameInput };
  const legacy = await store.runs.inputHolds(legacyRunOfInput(inputId), input);
  return legacy && legacy.sessionId === sessionId ? { id: legacyRunOfInput(inputId), same: legacy.same } : null;
}

/**
 * Whether input `inputId` was steered in session `sessionId`: stored, taken by a run, or queued
 * as a run of its own (found by leftInputKey, or by the id it got before). One indexed read.
 */
export const inputSteered = (store: Store, { sessionId, inputId }: { sessionId: string; inputId: string }) =>
  store.inputs.steered(sessionId, inputId, { key: leftInputKey(inputId), id: legacyRunOfInput(inputId) });

/** The run queued from input `inputId` (see queueLeftInput), as a start answers it; null when there is none. */
export async function runMadeOfInput(
  store: Store,
  { sessionId, inputId }: { sessionId: string; inputId: string },
): Promise<{ run: RunView; created: true } | null> {
  const made = await runOfLeftInput(store, { sessionId, inputId, input: "" });
  const run = made && (await store.runs.get(made.id));
  return run ? { run: runView(run, await planOfRun(store, run)), created: true } : null;
}

/**
 * Starts the run of a steer that found no run to take its input: `start` (with `inputId`, the
 * input its run ended without, which the insert takes). When the end of that run or a pass
 * moving the queues on queued that input first (see queueLeftInput), the request's run is that one. A start refused
 * for a limit or a shutdown (429, 503) leaves the input on the run that ended without it, where
 * the next pass would queue it all the same (and a client retrying as told would run it twice):
 * it is queued now, and the answer is that queued run.
 */
export async function startOfInput<T extends { run: RunView; created: boolean }>(
  { sessionId, inputId }: { to: string; sessionId: string; inputId?: string },
  start: (takesInput: string | undefined) => Promise<T>,
  deps: QueueDeps & { startQueue: (sessionId: string) => void },
): Promise<T | { run: RunView; created: boolean }> {
  const made = () =>
    inputId === undefined ? Promise.resolve(null) : runMadeOfInput(deps.store, { sessionId, inputId });
  try {
    return await start(inputId);
  } catch (err) {
    if (inputId === undefined) throw err;
    if (isConflict(err, "input_taken")) return (await made()) ?? Promise.reject(err);
    if (!(err instanceof AppError && (err.status === 429 || err.status === 503))) throw err;
    // The input as left on its finished run; gone once the end of that run queued it (see queueInputsLeftBy).
    const left = await deps.store.inputs.left(inputId);
    const queued = left && (await queueLeftInput(deps, left));
    if (!queued) return (await made()) ?? Promise.reject(err);
    // Started once nothing is ahead of it, a slot is free and its key is under its limit.
    deps.startQueue(queued.sessionId);
    return { run: runView(queued), created: true };
  }
}

/**
 * The settings a steer's input is stored with (see InputRunSettings): those of the run the steer
 * would start, its fields resolved against the defaults as a start's (`defaultWebhook`: WEBHOOK_URL's target).
 */
export function inputRunSettings(params: StartRunInput, defaultWebhook?: WebhookTarget | null): InputRunSettings {
  const { maxTurns, contextMaxChars, maxTokens, maxDurationMs, maxToolCalls, loopRepeatLimit, planning, ...run } =
    newRunRecord(params, { status: "queued", defaultWebhook });
  const limits = { maxTokens, maxDurationMs, maxToolCalls, loopRepeatLimit, planning };
  return { maxTurns, contextMaxChars, ...limits, approval: run.approval, webhook: run.webhook };
}

/**
 * Every tool call asks for approval: whatever else `policies` (a run's, its session's) say of a
 * tool, a run's own `tools` entry decides first.
 */
const askingAll = (...policies: (ApprovalPolicy | null | undefined)[]): ApprovalPolicy => ({
  default: "ask",
  tools: Object.fromEntries(policies.flatMap((p) => Object.keys(p?.tools ?? {})).map((tool) => [tool, "ask"])),
});

/**
 * Queues the input of a run that ended before taking it (left by a process that stopped
 * waiting for it) as a new run of its session, with its steer's own settings (see
 * InputRunSettings). Input stored without them (before migration 0023) takes the ended run's,
 * except that every tool call asks for approval: its steer may have asked for more approvals
 * than the ended run did, and no looser policy may apply. The input is removed in the run's
 * insert, so it starts one run at most. Null when it was taken meanwhile.
 */
export async function queueLeftInput(deps: QueueDeps, input: RunInput): Promise<RunRecord | null> {
  const from = await deps.store.runs.get(input.runId);
  if (!from) return null;
  const settings = input.settings ?? {
    approval: askingAll(from.approval, (await deps.store.sessions.get(from.sessionId))?.approval),
  };
  // An id of its own time (a keyed steer's input id is a hash: the run would sort first in lists),
  // created when its input was steered: the queue (oldest first) runs it before a run queued after that.
  const made = runLike(from, input.content);
  const record = { ...made, ...settings, idempotencyKey: leftInputKey(input.id), createdAt: input.createdAt };
  const queued = { type: "run.queued" as const, runId: record.id, seq: 1, at: made.createdAt };
  try {
    deps.hub.publish(record.id, await deps.store.runs.create(record, [queued], { takesInput: input.id }));
  } catch (err) {
    if (isConflict(err, "input_taken") || isConflict(err, "idempotency_key")) return null;
    throw err;
  }
  return record;
}

/**
 * Queues as new runs (see queueLeftInput) the steered inputs finished run `runId` left, in the
 * order they were steered (Store.inputs.leftOn), whoever waits for them: the run's end, and a
 * steer request seeing the run ended (either may come first; each input makes one run, and one
 * queued after an input steered before it is queued first). Resolves with how many it queued.
 */
export async function queueInputsLeftOn(deps: QueueDeps, runId: string): Promise<number> {
  let queued = 0;
  for (const id of await deps.store.inputs.leftOn(runId)) {
    const input = await deps.store.inputs.left(id);
    if (input && (await queueLeftInput(deps, input))) queued++;
  }
  return queued;
}
