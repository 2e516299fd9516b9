import type { BeforeToolCall } from "./approval.js";
import type { LoopEvent } from "./events.js";
import type { AgentMessage } from "./messages.js";
import type { ModelClient } from "./model.js";
import type { RunError } from "./run-view.js";
import type { RunStats } from "./stats.js";
import type { StepTrace } from "./step-trace.js";
import type { AnyAgentTool } from "./tool.js";

/** The injected I/O of one run of the loop, shared by its phases. */
export interface LoopContext {
  model: ModelClient;
  modelName?: string;
  system?: string;
  tools: ReadonlyMap<string, AnyAgentTool>;
  beforeToolCall: BeforeToolCall;
  /** Persists one message; awaited; a throw ends the run with `error`. */
  commit: (message: AgentMessage) => Promise<void>;
  emit: (event: LoopEvent) => void;
  /** After each turn, with its trace. */
  onStep: (step: StepTrace) => void;
  signal: AbortSignal;
  contextMaxChars?: number;
  newId: () => string;
  /** The whole history, growing as messages are committed. */
  history: AgentMessage[];
  /** Tool-call ids the conversation has already used: an id names one call, for results and approvals. */
  usedToolCallIds: Set<string>;
  stats: RunStats;
}

/** How a phase ended when the run must stop. */
export type PhaseStop = { stopReason: "aborted" } | { stopReason: "error"; error: RunError };

export class PersistenceError extends Error {
  readonly code = "PERSISTENCE_FAILED";
  constructor(readonly causeError: unknown) {
    super(
      `could not save the run's progress: ${causeError instanceof Error ? causeError.message : String(causeError)}`,
    );
    this.name = "PersistenceError";
  }
}

/** Commits a message and appends it to the history; a failed commit becomes a PhaseStop. */
export async function commitMessage(ctx: LoopContext, message: AgentMessage): Promise<PhaseStop | null> {
  try {
    await ctx.commit(message);
  } catch (err) {
    const failure = new PersistenceError(err);
    return { stopReason: "error", error: { code: failure.code, message: failure.message } };
  }
  ctx.history.push(message);
  return null;
}
