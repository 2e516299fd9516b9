import type { RunError } from "../agent/run-error.js";
import type { RunStats } from "../agent/stats.js";
import { describeStop, type StopPoint } from "../agent/stop-detail.js";

/**
 * The stop detail of a run the server (not the loop) ended as aborted: cancelled `by` whom,
 * at `point` when the loop said where it was, else after the run's last turn (before turn 1
 * when it made no model request).
 */
export function abortedDetail({ by, stats, point }: { by: string; stats: RunStats; point?: StopPoint }): string {
  return describeStop({ stopReason: "aborted", point: point ?? { phase: "after_turn", turn: stats.modelCalls }, by });
}

/**
 * The stop detail of a run whose loop could not go on (an invalid history) or whose end could
 * not be stored; `hint`: what to try, when the failure says better than the error's code.
 */
export function failedDetail(error: RunError, stats: RunStats, hint?: string): string {
  const point = { phase: "before_turn", turn: stats.modelCalls + 1 } as const;
  return describeStop({ stopReason: "error", point, error, hint });
}
