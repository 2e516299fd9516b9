import { setTimeout as delay } from "node:timers/promises";
import { AppError, sessionRunNotEnded } from "../errors.js";
import { BY_SESSION_DELETE } from "../runs/live-run.js";
import type { RunManager } from "../runs/run-manager.js";
import { isConflict } from "../store/errors.js";
import type { Store } from "../store/store.js";
import { outcomeOf } from "../store/write-outcome.js";

/** Store deletes refused for an unfinished run before a DELETE gives up (backing off 20 to 640 ms between them: 1.3 s in all). */
const DELETE_ATTEMPTS = 7;

/** Awaits `ending`; its NOT_FOUND for run `runId` counts as the run's end (gone: deleted with its session by another delete). */
async function unlessGone({ runId, ending }: { runId: string; ending: Promise<unknown> }): Promise<void> {
  try {
    await ending;
  } catch (err) {
    const details = err instanceof AppError ? (err.details as { run?: unknown } | undefined) : undefined;
    if (!(err instanceof AppError && err.code === "NOT_FOUND" && details?.run === runId)) throw err;
  }
}

/**
 * Ends the session's queued runs (none starts when the active run ends), then aborts the active
 * run, waiting for its end; each is cancelled BY_SESSION_DELETE, as their stop details say.
 */
async function endRuns(store: Store, manager: RunManager, id: string): Promise<void> {
  for (const queued of await store.runs.queuedIds(id))
    await unlessGone({ runId: queued, ending: manager.cancel(queued, BY_SESSION_DELETE) });
  const active = await manager.activeRunId(id);
  if (active) {
    await unlessGone({ runId: active, ending: manager.cancel(active, BY_SESSION_DELETE) });
    await unlessGone({ runId: active, ending: manager.waitForFinish(active) });
  }
}

async function anUnfinishedRun(store: Store, id: string): Promise<string | null> {
  return (await store.runs.active(id))?.id ?? (await store.runs.queuedIds(id))[0] ?? null;
}

/**
 * Deletes session `id`'s rows (the session, its runs and all they hold), its runs ended first:
 * tried until no start is in flight here (`inFlight`) and the store finds no unfinished run. A
 * start that was past the lookup when the delete was taken admits its run (a steer waits for
 * the active run, which ending it lets go on); another instance may have stored one meanwhile.
 * A run no instance ends (its end never stored, or left by a process and not recovered) is
 * answered (SESSION_BUSY after DELETE_ATTEMPTS), not waited for without end. A delete whose
 * answer was lost is read back: done, it is done (else its error is thrown; see delete's retry).
 */
export async function deleteSessionRows({
  id,
  store,
  manager,
  inFlight,
}: {
  id: string;
  store: Store;
  manager: RunManager;
  inFlight: () => Set<Promise<unknown>> | undefined;
}): Promise<void> {
  for (let refused = 0; ; ) {
    await endRuns(store, manager, id);
    const starts = inFlight();
    if (starts && starts.size > 0) {
      await Promise.allSettled(starts);
      continue;
    }
    try {
      await store.sessions.delete(id);
      return;
    } catch (err) {
      if ((await outcomeOf(err, async () => !(await store.sessions.access(id)))) === "done") return;
      if (!isConflict(err, "active_run")) throw err;
      if (++refused >= DELETE_ATTEMPTS) throw sessionRunNotEnded(id, await anUnfinishedRun(store, id));
      await delay(10 * 2 ** refused);
    }
  }
}
