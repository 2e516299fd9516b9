/**
 * Why a run stopped: `complete` (the model made no tool call), `max_turns` (this
 * run's model requests reached the budget), `aborted` (cancelled), `error`,
 * `loop_detected` (the same call kept failing the same way, or kept returning the same
 * result), `budget_exhausted` (the run's tokens, wall time or tool calls are spent).
 */
export const STOP_REASONS = ["complete", "max_turns", "aborted", "error", "loop_detected", "budget_exhausted"] as const;
export type StopReason = (typeof STOP_REASONS)[number];
