/**
 * Why a run stopped: `complete` (the model made no tool call), `max_turns` (this
 * run's model requests reached the budget), `aborted` (cancelled), `error`.
 */
export type StopReason = "complete" | "max_turns" | "aborted" | "error";
