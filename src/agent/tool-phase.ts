import type { ToolCallDecision } from "./approval.js";
import { commitItem, commitMessage, type LoopContext, type PhaseStop } from "./loop-context.js";
import type { ToolCall, ToolMessage } from "./messages.js";
import { resolveToolCall } from "./resolve-tool-call.js";
import type { ToolTrace } from "./step-trace.js";
import type { ToolOutcome } from "./tool.js";
import { overToolCallCap, placeInReply } from "./tool-call-cap.js";
import {
  abortedOutcome,
  deniedOutcome,
  executionFailedOutcome,
  notExecutedOutcome,
  toolResultMessage,
} from "./tool-results.js";

const ABORTED = Symbol("aborted");

/** Resolves with the promise, or with ABORTED as soon as the signal fires. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

const describeError = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Executes a turn's tool calls sequentially, in the model's order, committing
 * exactly one result per call (law 4). Returns a PhaseStop when the run must end.
 */
export async function runToolCalls(
  ctx: LoopContext,
  calls: readonly ToolCall[],
  traces: ToolTrace[],
): Promise<PhaseStop | null> {
  const record = async (call: ToolCall, outcome: ToolOutcome, durationMs = 0): Promise<PhaseStop | null> => {
    const message = toolResultMessage({ id: ctx.newId(), toolCallId: call.id, outcome, durationMs });
    traces.push(traceOf(call, message));
    return commitMessage(ctx, message);
  };
  /** Gives every call from `index` on the same kind of closing result. */
  const closeFrom = async (index: number, outcome: () => ToolOutcome): Promise<PhaseStop | null> => {
    for (const call of calls.slice(index)) {
      const stop = await record(call, outcome());
      if (stop) return stop;
    }
    return null;
  };

  const reply = placeInReply(ctx.history, calls);
  for (const [index, call] of calls.entries()) {
    if (ctx.signal.aborted) return (await closeFrom(index, abortedOutcome)) ?? { stopReason: "aborted" };

    const overCap = overToolCallCap({
      position: reply.offset + index,
      count: reply.count,
      max: ctx.maxToolCallsPerTurn,
    });
    if (overCap) {
      const stop = await record(call, overCap);
      if (stop) return stop;
      continue;
    }

    const resolved = resolveToolCall(call, ctx.tools);
    if (!resolved.ok) {
      const stop = await record(call, resolved.outcome);
      if (stop) return stop;
      continue;
    }

    await ctx.checkpoint("approval");
    if (ctx.signal.aborted) return (await closeFrom(index, abortedOutcome)) ?? { stopReason: "aborted" };
    let decision: ToolCallDecision | typeof ABORTED;
    try {
      decision = await raceAbort(
        ctx.beforeToolCall({ toolCall: call, tool: resolved.tool, input: resolved.input, signal: ctx.signal }),
        ctx.signal,
      );
    } catch (err) {
      // A hook torn down by the cancellation is not a failure: the calls are closed as aborted.
      if (ctx.signal.aborted) return (await closeFrom(index, abortedOutcome)) ?? { stopReason: "aborted" };
      return failAt(index, `approval failed for tool call ${call.id}: ${describeError(err)}`);
    }
    // Checkpoint (c): cancelled while approval was pending or as it resolved.
    if (decision === ABORTED || ctx.signal.aborted) {
      return (await closeFrom(index, abortedOutcome)) ?? { stopReason: "aborted" };
    }
    if (decision.decision === "deny") {
      const stop = await record(call, deniedOutcome(decision.reason ?? null));
      if (stop) return stop;
      continue;
    }

    await ctx.checkpoint("tool");
    if (ctx.signal.aborted) return (await closeFrom(index, abortedOutcome)) ?? { stopReason: "aborted" };
    // Durable before the tool runs: the start could not be recorded, the tool does not run.
    const notStarted = await commitItem(ctx, { type: "tool.started", toolCallId: call.id, tool: call.name });
    if (notStarted) return notStarted;
    const started = performance.now();
    let outcome: ToolOutcome;
    try {
      outcome = await resolved.tool.execute(resolved.input, { toolCallId: call.id, signal: ctx.signal });
    } catch (err) {
      if (ctx.signal.aborted) {
        // It started, so its outcome is recorded (generically); the run still ends aborted.
        const stop =
          (await record(call, executionFailedOutcome(), performance.now() - started)) ??
          (await closeFrom(index + 1, abortedOutcome));
        return stop ?? { stopReason: "aborted" };
      }
      return failAt(index, `tool ${call.name} failed: ${describeError(err)}`);
    }
    const stop = await record(call, outcome, performance.now() - started);
    if (stop) return stop;
    await ctx.checkpoint("tool-result");
    // Checkpoint (d): the tool's real result is kept; the rest are closed.
    if (ctx.signal.aborted) return (await closeFrom(index + 1, abortedOutcome)) ?? { stopReason: "aborted" };
  }
  return null;

  /** Law 8: the current call gets a generic failure, later ones "not executed". */
  async function failAt(index: number, message: string): Promise<PhaseStop> {
    const call = calls[index] as ToolCall;
    const stop = (await record(call, executionFailedOutcome())) ?? (await closeFrom(index + 1, notExecutedOutcome));
    return stop ?? { stopReason: "error", error: { code: "TOOL_EXECUTION_FAILED", message } };
  }
}

/** A tool call's line in its step trace, from its result. */
export function traceOf(call: ToolCall, message: ToolMessage): ToolTrace {
  return {
    toolCallId: call.id,
    tool: call.name,
    status: message.isError ? "error" : "ok",
    errorCode: message.metadata.errorCode,
    durationMs: message.metadata.durationMs,
    outputChars: message.metadata.outputChars,
    truncated: message.metadata.truncated,
  };
}
