import type { RunChange } from "./changes.js";
import { approvalExpired, callClosed, cancelRequested, decidedMeanwhile, StoreConflictError } from "./errors.js";
import type { MessageStore } from "./messages.js";
import type { QueueStore } from "./queue.js";
import type { RunStore } from "./runs.js";
import type { StepStore } from "./steps.js";
import { pastApprovalTimeout, type ToolCallStore } from "./tool-calls.js";

export interface Tables {
  runs: RunStore;
  messages: MessageStore;
  toolCalls: ToolCallStore;
  steps: StepStore;
  queue: QueueStore;
}

/**
 * Applies one change of a run, inside the caller's transaction (synchronous by
 * construction: the change is data). The tool-call ledger is written only here.
 */
export function applyRunChange(tables: Tables, runId: string, change: RunChange): void {
  switch (change.kind) {
    case "message": {
      const { message } = change;
      tables.messages.insert(message);
      if (message.role === "assistant" && message.toolCalls?.length) {
        tables.toolCalls.propose(runId, message.toolCalls, message.createdAt);
      } else if (message.role === "tool") {
        const { toolCallId } = message;
        if (tables.toolCalls.finish(runId, toolCallId, message.id, message.createdAt, change.undecided)) return;
        // Refused: the state the close found says why (read only for a refused undecided close).
        const decided = change.undecided && tables.toolCalls.status(runId, toolCallId)?.decision;
        throw decided ? decidedMeanwhile(toolCallId) : callClosed(runId, toolCallId);
      }
      return;
    }
    case "toolCall.awaitingApproval":
      if (!tables.toolCalls.awaitApproval(runId, change.toolCallId, change.reason, change.at))
        throw callClosed(runId, change.toolCallId);
      return;
    case "toolCall.decided":
      if (change.decision === "approve" && change.approvalTimeoutMs !== undefined) {
        const call = tables.toolCalls.status(runId, change.toolCallId);
        const open = call?.state === "proposed" || call?.state === "awaiting_approval";
        if (open && pastApprovalTimeout(call.approvalRequestedAt, change.at, change.approvalTimeoutMs))
          throw approvalExpired(change.toolCallId);
      }
      if (!tables.toolCalls.decide(runId, change.toolCallId, change.decision, change.reason, change.at)) {
        throw new StoreConflictError("decided", `tool call ${change.toolCallId} was already decided`);
      }
      return;
    case "toolCall.started":
      if (tables.toolCalls.start(runId, change.toolCallId, change.at)) return;
      if (tables.runs.cancelRequested([runId]).length > 0) throw cancelRequested(runId);
      throw callClosed(runId, change.toolCallId);
    case "status":
      tables.runs.setStatus(runId, change.status, change.cancelledBy ?? null);
      return;
    case "cancelRequested":
      tables.runs.requestCancel(runId, change.at, change.by ?? null);
      return;
    case "step":
      tables.steps.save(runId, change.step);
      return;
    case "stats":
      tables.runs.saveStats(runId, change.stats);
      return;
    case "duration":
      tables.runs.saveDuration(runId, change.durationMs);
      return;
    case "input.taken":
      if (!tables.queue.take(runId, change.inputId)) {
        throw new StoreConflictError("input_taken", `input ${change.inputId} is not pending for run ${runId}`);
      }
      return;
    case "finish": {
      const outcome = tables.runs.finish(runId, change);
      if (outcome === "not_live")
        throw new StoreConflictError("run_not_live", `run ${runId} has already finished or is gone`);
      if (outcome === "cancel_requested") throw cancelRequested(runId);
      return;
    }
  }
}
