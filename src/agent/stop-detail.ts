import { characterBoundary } from "../utf16.js";
import type { BudgetFinding } from "./budget.js";
import type { LoopFinding } from "./loop-guard.js";
import type { RunError } from "./run-error.js";

/** Where in the run it stopped: before a model request, during a turn (maybe at one of its calls), or after a turn. */
export interface StopPoint {
  phase: "before_turn" | "in_turn" | "after_turn";
  turn: number;
  toolCall?: { id: string; tool: string };
}

/** The facts a stop is explained from; one variant per stop reason that is not `complete`. */
export type StopFacts =
  | { stopReason: "max_turns"; point: StopPoint; maxTurns: number }
  /** `by`: who or what cancelled it, as the sentence goes on ("by a DELETE /runs/{id} request", "because ..."). */
  | { stopReason: "aborted"; point: StopPoint; by: string }
  /** `hint`: what to try, when the failure says better than its code's (a storage failure's kind). */
  | { stopReason: "error"; point: StopPoint; error: RunError; hint?: string | undefined }
  | { stopReason: "loop_detected"; point: StopPoint; loop: LoopFinding }
  | { stopReason: "budget_exhausted"; point: StopPoint; budget: BudgetFinding };

/**
 * The `by` of a run cancelled because its session was deleted, alone or followed by when: no
 * run can continue in that session, so its stop detail gives no advice to start one.
 */
export const BECAUSE_SESSION_DELETED = "because its session was deleted";

const count = (n: number): string => n.toLocaleString("en-US");
const seconds = (ms: number): string => `${(ms / 1000).toLocaleString("en-US", { maximumFractionDigits: 1 })} s`;

/** The arguments as a person reads them in one sentence: at most 80 characters. */
function excerpt(text: string): string {
  if (text.length <= 80) return text;
  // Never half a character: a cut after a high surrogate leaves its pair out too.
  return `${text.slice(0, characterBoundary(text, 77))}...`;
}

/** Where the run stopped, in words; a point after turn 0 (no turn was done) is before turn 1. */
function where(point: StopPoint): string {
  const turn = Math.max(point.turn, 1);
  if (point.phase === "before_turn" || (point.phase === "after_turn" && point.turn < 1)) return `before turn ${turn}`;
  if (point.phase === "after_turn") return `after turn ${turn}`;
  return point.toolCall
    ? `in turn ${turn} at tool call ${point.toolCall.id} (${point.toolCall.tool})`
    : `in turn ${turn}`;
}

/** What to try about a tool error code that keeps coming back. */
const toolErrorHints: Record<string, string> = {
  NOT_FOUND: "check the file name or path (list_files shows what exists)",
  PATH_OUTSIDE_WORKSPACE: "only paths inside the session's workspace can be used",
  NOT_A_FILE: "the path is a directory; read a file inside it",
  NO_MATCH: "the text to replace is not in the file; read the file first",
  AMBIGUOUS_MATCH: "the text to replace occurs several times; give more context or set replaceAll",
  INVALID_ARGUMENTS: "the arguments do not fit the tool's schema; check the tool's description",
  UNKNOWN_TOOL: "the tool is not offered to this session; check the session's tools",
  DENIED: "the approval policy or a person denies this call; change the request or the policy",
  SHELL_FAILED: "the command keeps failing the same way; fix the command or what it depends on",
};

/** What to try about a run error, by its code. */
const runErrorHints: Record<string, string> = {
  MODEL_AUTH: "check OPENAI_API_KEY",
  MODEL_NOT_FOUND: "check the session's model name (or OPENAI_MODEL)",
  MODEL_RATE_LIMITED: "retry later or lower the request rate",
  MODEL_QUOTA_EXHAUSTED:
    "check the model provider account's plan and billing; retrying will not help until the account has quota or credit again",
  MODEL_TIMEOUT: "retry, or raise MODEL_REQUEST_TIMEOUT_MS / MODEL_IDLE_TIMEOUT_MS / MODEL_STREAM_MAX_MS",
  MODEL_UPSTREAM: "retry later; the model provider failed",
  MODEL_OUT_OF_DESCRIPTORS:
    "retry shortly; if it keeps happening, lower MAX_CONNECTIONS or raise the server's open-file limit (ulimit -n)",
  MODEL_LENGTH: "the reply hit the model's output limit; ask for smaller steps",
  MODEL_CONTENT_FILTER: "the provider's content filter stopped the reply; rephrase the request",
  MODEL_OUTPUT_TOO_LARGE: "the reply passed MODEL_MAX_OUTPUT_CHARS; ask for smaller steps",
  MODEL_NOT_CONFIGURED: "set OPENAI_BASE_URL and OPENAI_MODEL",
  EMPTY_RESPONSE: "start a new run; the model sent nothing usable",
  CONTEXT_TOO_SMALL: "raise contextMaxChars",
  PERSISTENCE_FAILED: "check the database's disk and permissions, then start a new run",
  TOOL_EXECUTION_FAILED: "the server log has the tool's error; start a new run once it is fixed",
};

function loopCause(loop: LoopFinding): string {
  const call = `${loop.tool} ${excerpt(loop.arguments)}`;
  if (loop.kind === "same_error") {
    const hint = toolErrorHints[loop.errorCode ?? ""] ?? "change the request, or raise loopRepeatLimit";
    return `${call} failed with ${loop.errorCode ?? "an error"} ${loop.count} times in a row; ${hint}`;
  }
  return (
    `${call} returned the same result ${loop.count} times in a row, so the model learned nothing new; ` +
    "rephrase the task, or raise loopRepeatLimit"
  );
}

/** What a spent budget used, in words: "this run used 1,200 of its 1,000 tokens". */
export function budgetUsage(budget: BudgetFinding): string {
  switch (budget.budget) {
    case "tokens":
      return `this run used ${count(budget.used)} of its ${count(budget.limit)} tokens`;
    case "duration":
      return `this run has run for ${seconds(budget.used)} of its ${seconds(budget.limit)}`;
    case "tool_calls":
      return `this run started ${count(budget.used)} of its ${count(budget.limit)} tool calls`;
  }
}

const budgetKnob = { tokens: "maxTokens", duration: "maxDurationMs", tool_calls: "maxToolCalls" } as const;

const budgetCause = (budget: BudgetFinding): string =>
  `${budgetUsage(budget)}; raise ${budgetKnob[budget.budget]} or start a new run`;

function cause(facts: StopFacts): string {
  switch (facts.stopReason) {
    case "max_turns":
      return `the run made its ${count(facts.maxTurns)} model requests (maxTurns) and the model was still calling tools; raise maxTurns or continue in a new run`;
    case "aborted":
      return facts.by.startsWith(BECAUSE_SESSION_DELETED)
        ? `the run was cancelled ${facts.by}`
        : `the run was cancelled ${facts.by}; start a new run to continue`;
    case "error":
      return `${facts.error.message} (${facts.error.code}); ${facts.hint ?? runErrorHints[facts.error.code] ?? "see the run's error"}`;
    case "loop_detected":
      return loopCause(facts.loop);
    case "budget_exhausted":
      return budgetCause(facts.budget);
  }
}

/** One sentence naming the step, the cause and what to try, built from the facts of the stop. */
export function describeStop(facts: StopFacts): string {
  return `stopped ${where(facts.point)}: ${cause(facts)}`;
}
