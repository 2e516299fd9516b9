import type { StopPoint } from "../agent/stop-detail.js";
import type { ToolOutcome } from "../agent/tool.js";
import type { RunView } from "../domain/run.js";
import { isConflict } from "../store/errors.js";
import { runView } from "../store/runs.js";
import type { ToolCallRecord } from "../store/store.js";
import type { ExecutionDeps } from "./execution.js";
import { finishRun, type RunEnd, suspendedView } from "./finish.js";
import type { LiveRun, RunPhase } from "./live-run.js";
import { persistenceFailure } from "./run-failure.js";
import { abortedDetail, failedDetail } from "./stop-details.js";

/** How often a run whose end could not be written tries again. */
export const FINISH_RETRY_MS = 1000;

/**
 * Writes a live run's end (see finishRun), trying again while storage fails. The end is
 * decided once what its write needs is read: a DELETE that arrived until then ends it
 * `aborted`; from then until the write is stored (or fails) the run is `ending`, so a DELETE
 * finds it finished with the end being written. Storage that keeps failing does not keep the
 * run's waiters waiting: after `finishReportMs` its end is fixed and reported (`ended`), an
 * `error` when it would have been a success (its answer may not be stored), and this process
 * keeps trying to store that end until it can, or until shutdown gives up.
 */
export async function finishWithRetry({
  deps,
  live,
  end,
  outcomeFor,
}: {
  deps: Pick<ExecutionDeps, "store" | "finishReportMs" | "accepting" | "logger">;
  live: LiveRun;
  /** `stopPoint`: where the loop stopped, to explain an end a DELETE overrode. */
  end: RunEnd & { stopPoint?: StopPoint };
  outcomeFor: (call: ToolCallRecord, stopReason: RunEnd["stopReason"]) => ToolOutcome;
}): Promise<RunView> {
  const firstTry = performance.now();
  for (let attempt = 0; ; attempt++) {
    if (live.stopped) return suspendedView(deps.store, live);
    if (live.storedCause === "unread") await readStoredCause(deps.store, live);
    /** This attempt's end once decided, and the `ending` phase it set with what that replaced. */
    const tried: { end: RunEnd | null; ending: { view: RunView; before: RunPhase } | null } = {
      end: null,
      ending: null,
    };
    try {
      const view = await finishRun({
        store: deps.store,
        recorder: live.recorder,
        record: live.record,
        end: () => {
          tried.end = endNow(live, end);
          return tried.end;
        },
        decided: (view) => {
          // Already ending (an end reported while storage failed), or stopped meanwhile: left as it is.
          if (live.phase.name === "ending" || live.stopped) return;
          tried.ending = { view, before: live.phase };
          live.phase = { name: "ending", view, cancelled: live.cancelRequested, reported: false };
        },
        outcomeFor: (call) => outcomeFor(call, tried.end?.stopReason ?? end.stopReason),
      });
      live.reportEnd(view);
      return view;
    } catch (err) {
      // Not stored: the run is as it was before this attempt (a DELETE may still cancel it).
      const set = tried.ending;
      if (set && live.phase.name === "ending" && live.phase.view === set.view) live.phase = set.before;
      // Stopped meanwhile (its lease lost, or shutdown): the end is no longer this process's to write.
      if (live.stopped) continue;
      if (isConflict(err, "cancel_requested")) {
        // Cancelled through the store (by another instance) meanwhile: it ends aborted, now.
        if (!live.cancelStored() && live.phase.name === "ending") {
          // Its end was not a cancel's: who asked is read from the store (see LiveRun.storedCause).
          if (!live.phase.cancelled) live.storedCause = "unread";
          live.phase = { name: "cancelling" };
        }
        continue;
      }
      if (attempt === 0) deps.logger.error({ err, runId: live.id }, "could not record the end of the run; retrying");
      if (!deps.accepting() && attempt > 2) throw err;
      if (live.phase.name !== "ending" && performance.now() - firstTry >= deps.finishReportMs)
        reportUnstoredEnd(live, tried.end ?? endNow(live, end), err);
      await new Promise((resolve) => setTimeout(resolve, FINISH_RETRY_MS));
    }
  }
}

/**
 * The end to write now: the one already reported (storage failed before), else the loop's
 * own, unless a DELETE overtook it (then `aborted`, explained from where the loop stopped).
 */
function endNow(live: LiveRun, end: RunEnd & { stopPoint?: StopPoint }): RunEnd {
  if (live.phase.name === "ending") {
    const fixed = live.phase.view;
    return {
      stopReason: fixed.stopReason ?? "error",
      stopDetail: fixed.stopDetail,
      error: fixed.error,
      stats: fixed.stats,
    };
  }
  if (!live.cancelRequested) {
    const error = end.stopReason === "error" ? end.error : null;
    return { stopReason: end.stopReason, stopDetail: end.stopDetail, error, stats: end.stats };
  }
  // The loop's words, unless who asked was read from the store since its signal fired.
  const stopDetail =
    end.stopReason === "aborted" && live.storedCause !== "read"
      ? end.stopDetail
      : abortedDetail({ by: live.cancelReason, stats: end.stats, point: end.stopPoint });
  return { stopReason: "aborted", stopDetail, error: null, stats: end.stats };
}

/**
 * Reads who asked for the stored cancel request that cancelled `live` (see LiveRun.cancelStored)
 * into its cancelReason (kept BY_DELETE for a request that did not say); a read that fails
 * leaves it unread, for the next attempt.
 */
async function readStoredCause(store: ExecutionDeps["store"], live: LiveRun): Promise<void> {
  const access = await store.runs.access(live.id).catch(() => undefined);
  if (access === undefined) return;
  if (access?.cancelledBy) live.cancelReason = access.cancelledBy;
  live.storedCause = "read";
}

/** Fixes the end of a run that storage does not take, and reports it to the run's waiters. */
function reportUnstoredEnd(live: LiveRun, end: RunEnd, err: unknown): void {
  if (live.stopped) return;
  const succeeded = end.stopReason === "complete" || end.stopReason === "max_turns";
  const { error, hint } = persistenceFailure("could not record the end of the run", err);
  const reported: RunEnd = succeeded
    ? { stopReason: "error", stopDetail: failedDetail(error, end.stats, hint), error, stats: end.stats }
    : end;
  const view: RunView = {
    ...runView(live.record),
    status: "finished",
    ...reported,
    finishedAt: new Date().toISOString(),
  };
  live.phase = { name: "ending", view, cancelled: live.cancelRequested, reported: true };
  live.reportEnd(view);
}
