import { AppError, shuttingDown, tooManyRuns } from "../errors.js";
import type { ControlDeps } from "./control.js";
import { cancelRun } from "./control.js";
import type { SlotHandover } from "./registry.js";

/** How long an interrupting start waits for the interrupted run's end to be stored. */
const INTERRUPT_WAIT_MS = 10_000;
/** How often the end of a run executed elsewhere is looked for. */
const POLL_MS = 50;

/**
 * Who cancelled an interrupted run, as its stop detail says it (the console looks for
 * `ifBusy "interrupt"` in it to follow the run that took its place: see console/main.ts).
 */
export const INTERRUPTED_BY = 'by a new run started with ifBusy "interrupt"';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

/**
 * Cancels the session's active run exactly as DELETE does (every call closed, `aborted`) and
 * resolves once its end is stored, or after INTERRUPT_WAIT_MS (the new run's insert is then
 * refused as busy: the one-active rule stays the judge). A run this process executes is
 * marked handed over meanwhile: its end leaves the session's queue for the new run. A run
 * started with `idempotencyKey` is spared: it is what a concurrent request with that key (a
 * retry of this one) started, and this request's start returns it. With `only`, an active run
 * other than that one is spared too (one started since the caller saw `only` active). Nothing
 * is cancelled when the new run could not start after it: once shutdown began (503), or when
 * this process is at MAX_CONCURRENT_RUNS and the run does not execute here (a run start-up
 * recovery holds for a slot, one executed elsewhere), whose end frees no slot here (429).
 * Resolves with the id of the run it cancelled (`interrupted`, null when none) and, for a run
 * executed here, the handover of its slot (see LiveRuns.handOver), which the caller releases
 * once its start is over: the slot the run's end gives back is the new run's, not a queued run's
 * (nor one's held for a slot), even on a full server.
 */
export async function interruptActive(
  deps: ControlDeps,
  { sessionId, idempotencyKey, only }: { sessionId: string; idempotencyKey?: string; only?: string },
): Promise<{ interrupted: string | null; handover?: SlotHandover }> {
  const none = { interrupted: null };
  const active = await deps.store.runs.active(sessionId);
  if (!active) return none;
  if (idempotencyKey !== undefined && active.idempotencyKey === idempotencyKey) return none;
  if (only !== undefined && active.id !== only) return none;
  // A run the start-up recovery is resuming is cancelled as the live run it becomes (see ControlDeps.recovered).
  if (!deps.registry.get(active.id)) await deps.recovered?.(active.id);
  const live = deps.registry.get(active.id);
  if (!deps.accepting()) throw shuttingDown();
  const max = deps.maxConcurrentRuns;
  if (!live && max !== undefined && deps.registry.size >= max) throw tooManyRuns(max, 1);
  if (live) live.handedOver = true;
  // Before the cancel: the run may leave as soon as its signal fires.
  const handover = live ? deps.registry.handOver(live) : undefined;
  try {
    await cancelRun(deps, active.id, INTERRUPTED_BY);
  } catch (err) {
    handover?.release();
    throw err;
  }
  const deadline = Date.now() + INTERRUPT_WAIT_MS;
  if (live) {
    // The wait's timer goes as soon as the run's end wins: nothing of it outlives the start.
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      live.done.then(
        () => true,
        () => true,
      ),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), INTERRUPT_WAIT_MS).unref();
      }),
    ]).finally(() => clearTimeout(timer));
    // Still ending: the new run will be refused, so this run's end starts the queue (and frees its slot) after all.
    if (!ended) {
      live.handedOver = false;
      handover?.release();
      return { interrupted: active.id };
    }
    return { interrupted: active.id, handover };
  }
  // Executed elsewhere (or left for a restart): its end comes from there. Its status alone is
  // read at each look (not its input, up to 1 MB, 20 times a second).
  while (Date.now() < deadline) {
    const run = await deps.store.runs.access(active.id);
    if (!run || run.status === "finished") break;
    await sleep(POLL_MS);
  }
  return { interrupted: active.id };
}

/** How long an interrupting start holds the session's queue at most: its wait, and a margin. */
const QUEUE_HOLD_MS = INTERRUPT_WAIT_MS + 5_000;

/**
 * How many times an interrupting start interrupts the session's active run and inserts its
 * own (see interruptAndStart) before it is answered 409 SESSION_BUSY.
 */
export const INTERRUPT_ATTEMPTS = 3;

/**
 * Whether a start that interrupted run `interrupted` (null: none) was refused because another
 * run became the session's active one meanwhile: one another start inserted first (an
 * interrupting start on this instance or another, sent at the same time), not the one it
 * interrupted still ending.
 */
const lostToAnotherStart = (err: unknown, interrupted: string | null): boolean =>
  err instanceof AppError &&
  err.code === "SESSION_BUSY" &&
  (err.details as { runId?: string } | undefined)?.runId !== interrupted;

/**
 * `ifBusy: "interrupt"`: a retry (the same idempotency key) gets the run its first request
 * started (`repeated`), and interrupts nothing: that run is most likely the session's active
 * one. Else the session's queue is held (see Store.runs.holdQueue) from before the
 * active run is cancelled until `start` has inserted the new run, so the run that ends does not
 * start a queued run in its place, whichever instance executes it; then the queue is released
 * and moved on (it starts nothing while the new run is active, and goes on if it did not start).
 * Without `only`, an insert refused because another start's run became the session's active
 * one meanwhile (see lostToAnotherStart) interrupts that run in turn and tries again, up to
 * INTERRUPT_ATTEMPTS inserts in all: of interrupting starts sent at once, the last to insert
 * wins, and each earlier one is answered with its run, which that one ends `aborted`. Each try
 * holds the queue again (for QUEUE_HOLD_MS from then), and each hold is counted out at the end.
 * A start still refused then (or refused because the run it interrupted had not ended in
 * INTERRUPT_WAIT_MS) throws its SESSION_BUSY.
 */
export async function interruptAndStart<T>(
  deps: ControlDeps,
  {
    sessionId,
    idempotencyKey,
    only,
    repeated,
    start,
    startQueue,
  }: {
    sessionId: string;
    idempotencyKey?: string;
    /** Only this run is interrupted (see interruptActive). */
    only?: string;
    repeated: () => Promise<T | null>;
    /** Starts the new run, in the slot `handover` keeps for it if any (see interruptActive). */
    start: (handover?: SlotHandover) => Promise<T>;
    startQueue: () => void;
  },
): Promise<T> {
  const retried = await repeated();
  if (retried) return retried;
  await deps.store.runs.holdQueue(sessionId, QUEUE_HOLD_MS);
  let holds = 1;
  try {
    for (let attempt = 1; ; attempt++) {
      const { interrupted, handover } = await interruptActive(deps, { sessionId, idempotencyKey, only });
      try {
        return await start(handover);
      } catch (err) {
        const again = only === undefined && attempt < INTERRUPT_ATTEMPTS && lostToAnotherStart(err, interrupted);
        if (!again) throw err;
      } finally {
        // A slot the start did not take goes back (to the queues waiting for one).
        handover?.release();
      }
      await deps.store.runs.holdQueue(sessionId, QUEUE_HOLD_MS);
      holds++;
    }
  } finally {
    await releaseQueue(deps, { sessionId, holds, startQueue });
  }
}

/**
 * Counts this start's `holds` out of the session's queue hold and moves the queue on (it
 * starts nothing while another interrupting start, here or on another instance, still holds it).
 */
async function releaseQueue(
  deps: ControlDeps,
  { sessionId, holds, startQueue }: { sessionId: string; holds: number; startQueue: () => void },
): Promise<void> {
  let released = true;
  for (let left = holds; left > 0; left--) {
    released = await deps.store.runs.releaseQueue(sessionId).then(
      () => released,
      () => false,
    );
  }
  startQueue();
  // A release that failed leaves the hold to expire by itself: the queue is started again then
  // (a run enqueued meanwhile waits for it; on a shared database a peer's reaper may be first).
  if (!released) setTimeout(startQueue, QUEUE_HOLD_MS + 100).unref();
}
