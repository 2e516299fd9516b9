import type { Plan } from "../agent/plan.js";
import type { RunError } from "../agent/run-error.js";
import type { RunStats } from "../agent/stats.js";
import type { StopReason } from "../agent/stop-reason.js";

/** `queued`: stored behind the session's active run, started when the runs ahead of it end. */
export type RunStatus = "queued" | "running" | "awaiting_approval" | "cancelling" | "finished";

/** What a start on a session with an active run does (see RunManager.start). */
export const IF_BUSY = ["reject", "enqueue", "interrupt", "steer"] as const;
export type IfBusy = (typeof IF_BUSY)[number];

/** A run as clients see it (HTTP responses and the `run.finished` event). */
export interface RunView {
  id: string;
  sessionId: string;
  status: RunStatus;
  stopReason: StopReason | null;
  /** For every stop but `complete`: one sentence naming the step, the cause and what to try. */
  stopDetail: string | null;
  error: RunError | null;
  input: string;
  maxTurns: number;
  contextMaxChars: number | null;
  /** Budgets; null: none. */
  maxTokens: number | null;
  maxDurationMs: number | null;
  maxToolCalls: number | null;
  /** The loop guard's repeat limit; 0: off. */
  loopRepeatLimit: number;
  /** Whether the plan tools are offered. */
  planning: boolean;
  /** The plan the run's committed plan tool calls give; null when it has none. */
  plan: Plan | null;
  stats: RunStats;
  createdAt: string;
  finishedAt: string | null;
}
