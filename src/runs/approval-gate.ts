import type { BeforeToolCall, ToolCallDecision } from "../agent/approval.js";
import { conflict } from "../errors.js";
import type { Store } from "../store/store.js";
import { evaluateApproval } from "./approval-policy.js";
import type { LiveRun } from "./live-run.js";

export interface ApprovalGateDeps {
  store: Store;
  approvalTimeoutMs: number;
  setStatus: (run: LiveRun, status: "running" | "awaiting_approval") => void;
}

/**
 * Records a decision for a call that waits for approval: ledger row and
 * `approval.resolved` event in one transaction, then wakes the waiting loop.
 */
export function resolveApproval(
  deps: ApprovalGateDeps,
  run: LiveRun,
  toolCallId: string,
  decision: ToolCallDecision["decision"],
  reason: string | null,
): void {
  run.recorder.write(() => {
    if (!deps.store.toolCalls.decide(run.id, toolCallId, decision, reason, new Date().toISOString())) {
      throw conflict("APPROVAL_CONFLICT", `tool call ${toolCallId} was already decided`);
    }
    return [{ type: "approval.resolved", toolCallId, decision, reason }];
  });
  run.approvals.settle(toolCallId, { decision, reason });
  if (run.approvals.size === 0 && run.status === "awaiting_approval") deps.setStatus(run, "running");
}

/**
 * The `beforeToolCall` of a run: applies the approval policy, and for `ask`
 * records the request and waits for a person (or the timeout, which denies).
 * A decision already in the ledger (a resumed run) is reused, never asked twice.
 */
export function approvalGate(deps: ApprovalGateDeps, run: LiveRun): BeforeToolCall {
  return async ({ toolCall, tool, input }) => {
    // A run left for the restart asks nothing more here (the restart asks again).
    run.beforeNewWork();
    const ledger = run.resumed ? deps.store.toolCalls.get(run.id, toolCall.id) : null;
    if (ledger?.decision) return { decision: ledger.decision, reason: ledger.decisionReason };

    const mode = evaluateApproval({
      tool: tool.name,
      readOnly: tool.readOnly,
      session: run.session.approval,
      run: run.record.approval,
    });
    if (mode === "allow") return { decision: "approve" };
    if (mode === "deny") return { decision: "deny", reason: `the approval policy denies ${tool.name}` };

    if (ledger?.state !== "awaiting_approval") {
      const reason = `${tool.name} requires approval`;
      run.recorder.write(() => {
        deps.store.toolCalls.awaitApproval(run.id, toolCall.id, reason);
        return [{ type: "approval.requested", toolCallId: toolCall.id, tool: tool.name, input, reason }];
      });
    }
    deps.setStatus(run, "awaiting_approval");
    return run.approvals.wait(toolCall.id, {
      timeoutMs: deps.approvalTimeoutMs,
      onTimeout: () => {
        const reason = `no decision within the approval timeout (${deps.approvalTimeoutMs} ms)`;
        try {
          resolveApproval(deps, run, toolCall.id, "deny", reason);
        } catch {
          // The decision could not be recorded; the call is still denied (fail closed).
          run.approvals.settle(toolCall.id, { decision: "deny", reason });
          if (run.approvals.size === 0 && run.status === "awaiting_approval") deps.setStatus(run, "running");
        }
      },
    });
  };
}
