import type { ModelFailure } from "./classify-error.js";
import type { RequestGuard } from "./request-guard.js";

export const ABORTED: ModelFailure = { code: "MODEL_ABORTED", message: "the model request was aborted" };

/**
 * Why a model request was stopped, as the turn's failure: the caller's abort
 * (MODEL_ABORTED), the guard's idle timer or its deadline (MODEL_TIMEOUT, naming the
 * upstream, `from`, and the limit); null while nothing stopped it. Once the reply is whole
 * (`replyWhole`: its finish_reason arrived and no output came in a later chunk) only the
 * caller's abort fails it: the idle timer or the deadline then only cut short what may follow
 * (usage, `[DONE]`), a clean end. Output after the finish_reason's chunk means the upstream
 * sent it early: the reply is not whole, and a stop fails it as without a finish_reason.
 */
export function stopFailure({
  signal,
  guard,
  from,
  idleTimeoutMs,
  streamMaxMs,
  replyWhole,
}: {
  signal: AbortSignal;
  guard: RequestGuard;
  /** The upstream as a failure names it (worked out only for a failure). */
  from: () => string;
  idleTimeoutMs: number;
  streamMaxMs: number;
  replyWhole: boolean;
}): ModelFailure | null {
  if (signal.aborted) return ABORTED;
  if (replyWhole) return null;
  switch (guard.cause()) {
    case "idle":
      return {
        code: "MODEL_TIMEOUT",
        message: `the model stream from ${from()} stalled: no output (text, reasoning or tool calls) for ${idleTimeoutMs} ms`,
      };
    case "deadline":
      return {
        code: "MODEL_TIMEOUT",
        message: `the model stream from ${from()} went on past ${streamMaxMs} ms (MODEL_STREAM_MAX_MS)`,
      };
    default:
      return null;
  }
}
