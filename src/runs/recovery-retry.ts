import type { ClaimedRun } from "../store/store.js";
import { finishRun } from "./finish.js";
import { RunRecorder } from "./recorder.js";
import {
  leftCallOutcome,
  type RecoverOptions,
  type RecoveryDeps,
  type RecoveryReport,
  recoverRun,
} from "./recovery.js";
import { persistenceFailure } from "./run-failure.js";
import { failedDetail } from "./stop-details.js";

/** The waits before each further try of a recovery that failed (see recoverOrEnd). */
export const RECOVERY_RETRY_MS: readonly number[] = [100, 500, 2000];

/**
 * Recovers a run claimed over a database no other process opens (a SQLite file: no reaper
 * tries again later), as recoverRun does, trying again after each of RECOVERY_RETRY_MS while
 * that fails. A run that still cannot be recovered ends `error` (PERSISTENCE_FAILED) through
 * the one finish of a run, so that none is left `running` without an owner while the server
 * is up. Once shutdown began, or if that end cannot be written either, the run is left for
 * the next start, and the error is thrown.
 */
export async function recoverOrEnd(
  deps: RecoveryDeps,
  claimed: ClaimedRun,
  report: RecoveryReport,
  options: RecoverOptions = {},
): Promise<void> {
  let failure: unknown;
  for (const wait of [0, ...RECOVERY_RETRY_MS]) {
    if (wait) await new Promise((resolve) => setTimeout(resolve, wait));
    if (failure !== undefined && !deps.manager.accepting) throw failure;
    try {
      return await recoverRun(deps, claimed, report, options);
    } catch (err) {
      failure = err;
      deps.logger.warn({ err, runId: claimed.record.id }, "could not recover a claimed run; trying again");
    }
  }
  const { record: run, lease } = claimed;
  const { store, hub } = deps;
  const recorder = await RunRecorder.open({ store, hub, runId: run.id, sessionId: run.sessionId, lease });
  const { error, hint } = persistenceFailure("could not recover the run", failure);
  try {
    await finishRun({
      store,
      recorder,
      record: run,
      end: { stopReason: "error", stopDetail: failedDetail(error, run.stats, hint), error, stats: run.stats },
      outcomeFor: leftCallOutcome,
      retrace: true,
    });
  } finally {
    recorder.dispose();
  }
  deps.logger.error({ err: failure, runId: run.id }, "could not recover a claimed run: it ended with an error");
}
