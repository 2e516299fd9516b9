import type { RunView } from "../domain/run.js";
import type { WebhookTarget } from "../domain/webhook.js";
import { tooManyInputs } from "../errors.js";
import { newId } from "../ids.js";
import { isConflict } from "../store/errors.js";
import type { InputRunSettings, Store } from "../store/store.js";
import { type StartRunInput, steerInputId } from "./admission.js";
import type { EventHub } from "./event-hub.js";
import { inputRunSettings, inputSteered, queueInputsLeftOn, runMadeOfInput, startOfInput } from "./queue.js";
import type { LiveRuns } from "./registry.js";
import type { StartedRun } from "./run-manager-deps.js";
import { goneSince, keyReused, leftByEarlierCopy, runOfRepeatedSteer, takenBefore, viewOf } from "./steer-replay.js";

/** How often a steer looks at the store between the run's events (a run executed elsewhere sends none here). */
const POLL_MS = 250;

/**
 * The most steered inputs a run keeps waiting to be taken: one more is refused (429
 * TOO_MANY_INPUTS) and nothing of it stored. Each is stored whole and waited for by its request.
 */
export const MAX_PENDING_INPUTS = 32;

export interface SteerDeps {
  store: Store;
  hub: EventHub;
  accepting: () => boolean;
  /** The run as clients see it now. */
  get: (runId: string) => Promise<RunView | null>;
  /** Starts the session's queue in the background (a run queued from a steer's input). */
  startQueue: (sessionId: string) => void;
  /** The runs executing here: a repeated start's answer counts their duration up to now (see repeatedStart). */
  registry?: LiveRuns;
  /** WEBHOOK_URL's target, which a run made of a steer's input may take (see inputRunSettings). */
  defaultWebhook?: WebhookTarget | null;
}

/**
 * Where steered input went: `taken` by the active run (committed as a user message before its
 * next model request, or, during a shutdown, left stored for the restart);
 * `ended`: the run ended before taking it and nothing queued it (the caller starts a new run
 * with it; `inputId`: the stored input, still left, which that run's insert removes); `idle`:
 * the session has no active run, or one that takes no input any more.
 */
export type SteerOutcome =
  /** `replayed`: an earlier request with the same input id had steered it (see `inputId`). */
  | { to: "taken"; run: RunView; replayed?: boolean }
  | { to: "ended"; inputId?: string }
  | { to: "idle" }
  /** An earlier copy of this request made a run (see `repeatedRun`), answered with: nothing was steered. */
  | { to: "repeated"; started: StartedRun }
  /** The run ended without the input, which was queued as a run of its own (see queueInputsLeftOn). */
  | { to: "queued"; started: StartedRun };

/**
 * Joins `input` to the session's active run: stored (in the database, so whichever process
 * executes the run takes it, also after a restart; with `settings`) until the run takes it at
 * its next model request, which commits it as a user message; resolves once that happened, or
 * once the run ended without it. With `inputId` (made from an idempotency key), a repeated request steers
 * nothing twice: input already taken (a user message of that id) is answered with the run
 * that took it, input still stored is waited for again, and other input under the same id is
 * refused (409 IDEMPOTENCY_KEY_REUSED).
 */
export async function steerActive(
  deps: SteerDeps,
  {
    sessionId,
    input,
    inputId,
    repeatedRun,
    settings,
    gone,
  }: {
    sessionId: string;
    input: string;
    inputId?: string;
    /** Stored with the input, for the run made of it if the active run ends without it. */
    settings?: InputRunSettings;
    /**
     * The run an earlier copy of this request made, having found the session idle (null if
     * none): asked once an active run was found, so a run that copy made after this request
     * last looked for one is seen too, whether it is the active run or ended already.
     */
    repeatedRun?: () => Promise<StartedRun | null>;
    /** Aborted when the request's client has left: the wait ends, rejecting with its reason (see the loop). */
    gone?: AbortSignal;
  },
): Promise<SteerOutcome> {
  const replayed = inputId === undefined ? null : await takenBefore(deps, { sessionId, input, inputId });
  if (replayed) return replayed;
  const active = await deps.store.runs.active(sessionId);
  if (!active)
    return inputId === undefined ? { to: "idle" } : leftByEarlierCopy(deps, { sessionId, input, inputId, repeatedRun });
  const repeated = await repeatedRun?.();
  if (repeated) return { to: "repeated", started: repeated };
  const id = inputId ?? newId("msg");
  let wake: () => void = () => {};
  // Subscribed before the input is stored: no message or end of the run goes unseen.
  const unsubscribe = deps.hub.subscribe(active.id, (event) => {
    if (event.type === "message" || event.type === "run.finished") wake();
  });
  const onGone = () => wake();
  gone?.addEventListener("abort", onGone, { once: true });
  try {
    const stored = { id, runId: active.id, content: input, createdAt: new Date().toISOString(), settings };
    const added = await deps.store.inputs.add(stored, { max: MAX_PENDING_INPUTS }).catch((err: unknown) => {
      throw isConflict(err, "inputs_full") ? tooManyInputs(MAX_PENDING_INPUTS, active.id) : err;
    });
    // Its key's run, made by a start that raced this one (its look for this input came before
    // the add, this one's for its run before its insert): the input is that run's, withdrawn
    // here unless a run took it already (the start withdraws it too once it finds it).
    const raced = added && inputId !== undefined ? await repeatedRun?.() : null;
    if (raced && (await deps.store.inputs.withdraw(id))) return { to: "repeated", started: raced };
    if (!added) {
      // Ending already (cancelling), so it takes no input; or, with an id from a key, the input
      // is stored already and is waited for as the earlier request did, or went meanwhile.
      if (inputId === undefined) return { to: "idle" };
      const same = await deps.store.inputs.pendingHolds(active.id, id, input);
      if (same === false) throw keyReused(active.id);
      // Not pending on the active run: left on a run that ended without it (stored by an
      // earlier copy), or gone where goneSince looks.
      if (same === null) return leftByEarlierCopy(deps, { sessionId, input, inputId, repeatedRun });
    }
    while (true) {
      // A client gone waits no more (after one last look): its input stays stored, for the run
      // to take, or for the run's end to queue as a run of its own (see queueInputsLeftOn).
      const left = gone?.aborted === true;
      // Its own input's state only: no input's content nor the run's is read, so a wait costs
      // the same however many others wait and however long their inputs are.
      const status = await deps.store.inputs.pendingStatus(active.id, id);
      if (status === null) {
        // Queued as a run of its own once the run ended without it (the answer of the request
        // that stored it); or taken by the run (keyed, also where goneSince looks).
        const made = added ? await runMadeOf(deps, sessionId, id) : null;
        if (made) return made;
        const went = inputId === undefined ? null : await goneSince(deps, { sessionId, input, inputId, repeatedRun });
        if (went && went.to !== "taken") return went;
        return { to: "taken", run: went?.run ?? (await viewOf(deps, active.id)), replayed: !added };
      }
      // A run that ended without the input: the inputs it left are queued as runs, in the order
      // they were steered, as its end does (either may come first; see queueInputsLeftOn). Only
      // when that fails does the input start a run of its own (queued when a limit or a shutdown
      // refuses it one now).
      if (status === "finished") return await queuedOnEnd(deps, { sessionId, runId: active.id, id, added });
      // Shutting down, the run still live: the input stays stored for the restart, which gives
      // it to the run, or queues it as a new run if the run ends without it.
      if (!deps.accepting()) return { to: "taken", run: await viewOf(deps, active.id), replayed: !added };
      if (left) throw gone?.reason;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
        if (gone?.aborted) wake();
      });
    }
  } finally {
    gone?.removeEventListener("abort", onGone);
    unsubscribe();
  }
}

/**
 * The answer of a steer whose input `id` run `runId` ended without: the run made of it once
 * the inputs the run left are queued in steer order (a repeated copy's answer is not `created`),
 * with the session's queue started; `ended` when that failed (the caller starts the input's run).
 */
async function queuedOnEnd(
  deps: SteerDeps,
  { sessionId, runId, id, added }: { sessionId: string; runId: string; id: string; added: boolean },
): Promise<SteerOutcome> {
  const made = await queueInputsLeftOn(deps, runId).then(
    () => runMadeOf(deps, sessionId, id),
    () => null,
  );
  if (!made) return { to: "ended", inputId: id };
  deps.startQueue(sessionId);
  return added ? made : { to: "queued", started: { ...made.started, created: false } };
}

/** The run queued from input `id`, left on a run that ended without it (see queueInputsLeftOn); null when none is. */
async function runMadeOf(
  deps: SteerDeps,
  sessionId: string,
  id: string,
): Promise<{ to: "queued"; started: StartedRun } | null> {
  const made = await runMadeOfInput(deps.store, { sessionId, inputId: id });
  return made ? { to: "queued", started: made } : null;
}

/**
 * `ifBusy: "steer"`: the input joins the session's active run, or `start`s a new run (with
 * the input the active run ended without, if any) when there is none to take it. A request
 * repeated with its idempotency key gets the earlier answer (see steerActive).
 */
export async function steerOrStart(
  deps: SteerDeps,
  params: StartRunInput,
  start: (takesInput: string | undefined) => Promise<StartedRun>,
): Promise<StartedRun> {
  const inputId = steerInputId(params);
  const repeatedRun = inputId === undefined ? undefined : () => runOfRepeatedSteer(deps, params, inputId);
  const repeated = await repeatedRun?.();
  if (repeated) return repeated;
  const [sessionId, settings] = [params.session.id, inputRunSettings(params, deps.defaultWebhook)];
  const [input, gone] = [params.input, params.gone];
  const steered = await steerActive(deps, { sessionId, input, inputId, repeatedRun, settings, gone });
  if (steered.to === "taken") return { run: steered.run, created: false, steered: true, replayed: !!steered.replayed };
  if (steered.to === "repeated" || steered.to === "queued") return steered.started;
  return startOfInput({ ...steered, sessionId }, start, deps);
}

/**
 * Whether a start under an idempotency key repeats a steer made under that key, whatever its
 * `ifBusy` (not a field a repeat is compared by): the key's input is stored, was taken, or was
 * made a run of. Such a start is answered as the steer is (see steerOrStart), so the input runs
 * once. Without a key, nothing is read; with one, one indexed read.
 */
export function repeatsSteer(
  store: Store,
  params: Pick<StartRunInput, "session" | "idempotencyKey">,
): Promise<boolean> {
  const inputId = steerInputId(params);
  return inputId === undefined
    ? Promise.resolve(false)
    : inputSteered(store, { sessionId: params.session.id, inputId });
}
