import { stopCause, type ToolOutcome, toolError } from "../agent/tool.js";
import { errnoCode } from "../errno.js";
import { ToolErrorCode } from "./error-codes.js";
import { fsErrorOutcome } from "./fs-errors.js";

/** search_files' result when the run's signal fired mid-search (cancelled, or out of time). */
export const abortedOutcome = (signal: AbortSignal): ToolOutcome =>
  toolError(ToolErrorCode.searchAborted, `the search was stopped because ${stopCause(signal)}`, false);

/** search_files' result when the search ran past its time limit. */
export const timeoutOutcome = (timeLimitMs: number): ToolOutcome =>
  toolError(
    ToolErrorCode.searchTimeout,
    `the search was stopped after ${timeLimitMs} ms: the pattern may backtrack catastrophically (nested quantifiers ` +
      "such as (a+)+), or the search is too broad; simplify the pattern or narrow the path or glob",
    true,
  );

/**
 * search_files' result when its worker failed (`error`, see SearchRun "failed") while
 * searching `displayPath`: a system error (a `code` such as EIO) is a file-system error
 * (fsErrorOutcome); anything else (out of memory, a bug) is SEARCH_FAILED, retryable, naming
 * only the error's code or class (its text may contain server paths).
 */
export function searchFailedOutcome(error: unknown, displayPath: string): ToolOutcome {
  const code = errnoCode(error);
  if (code !== undefined && /^E[A-Z0-9]+$/.test(code)) return fsErrorOutcome(error, displayPath);
  const name = code ?? (error instanceof Error ? error.name : "unknown");
  return toolError(
    ToolErrorCode.searchFailed,
    `the search failed (${name}); if the pattern is complex or the search broad, simplify the pattern or narrow ` +
      "the path or glob",
    true,
  );
}
