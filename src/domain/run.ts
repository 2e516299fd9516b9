import type { RunError } from "../agent/run-error.js";
import type { RunStats } from "../agent/stats.js";
import type { StopReason } from "../agent/stop-reason.js";

export type RunStatus = "running" | "awaiting_approval" | "cancelling" | "finished";

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
