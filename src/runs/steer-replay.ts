import type { RunView } from "../domain/run.js";
import { conflict, notFound } from "../errors.js";
import { runView } from "../store/runs.js";
import { repeatedStart, type StartRunInput } from "./admission.js";
import { runOfLeftInput } from "./queue.js";
import type { StartedRun } from "./run-manager-deps.js";
import { planOfRun } from "./run-plan.js";
import type { SteerDeps, SteerOutcome } from "./steer.js";

/*
 * A steer repeated under its Idempotency-Key (see steerActive): answered as its first copy was,
 * from where that copy's input went (taken by a run, left on one, made a run of its own), its
 * input compared in the database, never read.
 */

/**
 * A repeated steer whose idempotency key was first used for other input: `runId` is the run the
 * key's input went to (the run that took it, holds it, ended without it, or was made of it).
 */
export const keyReused = (runId: string) =>
  conflict("IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used to steer a run with a different input", {
    runId,
    differs: ["input"],
  });

/** A steer with an idempotency key: its input's id comes from the key (see steerInputId). */
interface KeyedSteer {
  sessionId: string;
  input: string;
  inputId: string;
  repeatedRun?: () => Promise<StartedRun | null>;
}

/**
 * No active run (or one not holding the input), for a steer repeated with its key: its earlier copy may have stored the input
 * on a run that then ended without taking it, its process lost before it started the input's
 * own run (a restart's recovery ended the run, and has not yet queued that input as a run of
 * its own: see queueLeftInput). The input is then this request's to start (`ended`): one run
 * whichever of the two takes it first (a run's insert removes the input it takes). Input gone
 * since the first look was taken by a run (a user message, or the run queued from it), found
 * again here; else the session is `idle`. A run that has finished takes no input again, so
 * what is not left now was taken.
 */
export async function leftByEarlierCopy(
  deps: SteerDeps,
  { sessionId, input, inputId, repeatedRun }: KeyedSteer,
): Promise<SteerOutcome> {
  // Compared in the database: neither this input's content nor any other's is read.
  const left = await deps.store.inputs.leftHolds(inputId, input);
  if (left && !left.same) throw keyReused(left.runId);
  if (left) return { to: "ended", inputId };
  return (await goneSince(deps, { sessionId, input, inputId, repeatedRun })) ?? { to: "idle" };
}

/**
 * Where a keyed steer's input went once it is no longer pending on the run it was stored on:
 * taken by a run (a user message of its id), or queued as a run of its own once that run ended
 * without it (see queueLeftInput), or a run this request's key started; null when none of them
 * holds it (the run it was stored on ended taking no input).
 */
export async function goneSince(
  deps: SteerDeps,
  { sessionId, input, inputId, repeatedRun }: KeyedSteer,
): Promise<SteerOutcome | null> {
  const taken = await takenBefore(deps, { sessionId, input, inputId });
  if (taken) return taken;
  const repeated = await repeatedRun?.();
  return repeated ? { to: "repeated", started: repeated } : null;
}

/** The answer to a repeated steer whose input a run took already (a user message of its id); null if none did. */
export async function takenBefore(
  deps: SteerDeps,
  { sessionId, input, inputId }: { sessionId: string; input: string; inputId: string },
): Promise<SteerOutcome | null> {
  // Compared in the database: a retry with other input is refused without reading the taken one.
  const taken = await deps.store.messages.userMessageHolds(sessionId, inputId, input);
  if (!taken) return null;
  if (!taken.same) throw keyReused(taken.runId);
  return { to: "taken", run: await viewOf(deps, taken.runId), replayed: true };
}

/** The run as clients see it now; NOT_FOUND when it is gone. */
export async function viewOf(deps: SteerDeps, runId: string): Promise<RunView> {
  const view = await deps.get(runId);
  if (!view) throw notFound("run", runId);
  return view;
}

/**
 * The run a steer with this idempotency key made when it found no run to take its input:
 * started by the request (it holds the key) or queued from the input left by a process that
 * stopped waiting for it (see runOfLeftInput). Null when there is none.
 */
export async function runOfRepeatedSteer(
  deps: Pick<SteerDeps, "store" | "registry">,
  params: StartRunInput,
  inputId: string,
): Promise<StartedRun | null> {
  const keyed = await repeatedStart(deps, params);
  if (keyed) return keyed;
  // Its input is the earlier request's: compared in the database, and the run read only for the same request.
  const held = await runOfLeftInput(deps.store, { sessionId: params.session.id, inputId, input: params.input });
  if (!held) return null;
  if (!held.same) throw keyReused(held.id);
  const made = await deps.store.runs.get(held.id);
  return made ? { run: runView(made, await planOfRun(deps.store, made)), created: false } : null;
}
