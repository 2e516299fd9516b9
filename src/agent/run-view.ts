import type { RunStats } from "./stats.js";
import type { StopReason } from "./stop-reason.js";

export type RunStatus = "running" | "awaiting_approval" | "cancelling" | "finished";

/** Why a run failed, in words a person can act on, with a stable code. */
export interface RunError {
  code: string;
  message: string;
}

/** A run as clients see it (HTTP responses and the `run.finished` event). */
export interface RunView {
  id: string;
  sessionId: string;
  status: RunStatus;
  stopReason: StopReason | null;
  error: RunError | null;
  input: string;
  maxTurns: number;
  contextMaxChars: number | null;
  stats: RunStats;
  createdAt: string;
  finishedAt: string | null;
}
