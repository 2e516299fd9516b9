import type { ToolOutcome } from "../agent/tool.js";
import { toolResultMessage } from "../agent/tool-results.js";
import { newId } from "../ids.js";
import type { Store } from "../store/store.js";
import type { ToolCallRecord } from "../store/tool-calls.js";
import type { RunRecorder } from "./run-recorder.js";

/**
 * Law 4 at a run's end: every call of the run still without a result gets one now,
 * chosen by `outcomeFor`, committed with its event and ledger row. The loop stops
 * only after the last call's result, so open calls all belong to the last assistant
 * message and their results keep the history valid. Idempotent: closed calls are skipped.
 */
export function closeOpenCalls({
  store,
  recorder,
  outcomeFor,
  only = () => true,
}: {
  store: Store;
  recorder: RunRecorder;
  outcomeFor: (call: ToolCallRecord) => ToolOutcome;
  /** Which open calls to close (default: all). */
  only?: (call: ToolCallRecord) => boolean;
}): number {
  const open = store.toolCalls.open(recorder.runId).filter(only);
  for (const call of open) {
    const message = toolResultMessage({ id: newId("msg"), toolCallId: call.id, outcome: outcomeFor(call) });
    recorder.commitMessage(message, (stored) =>
      store.toolCalls.finish(recorder.runId, call.id, stored.id, stored.createdAt),
    );
  }
  return open.length;
}
