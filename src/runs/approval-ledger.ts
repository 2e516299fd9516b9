import { z } from "zod";
import type { ToolCallDecision } from "../agent/approval.js";
import type { Store, ToolCallStatus } from "../store/store.js";
import { pastApprovalTimeout } from "../store/tool-calls.js";

/** The reason of the denial the approval timeout (`timeoutMs`) gives a call nobody decided in time. */
export const approvalTimedOut = (timeoutMs: number): string =>
  `no decision within the approval timeout (${timeoutMs} ms)`;

/**
 * The decision a run takes from its ledger row `call`; null while the call is undecided. An
 * approval stored later than `timeoutMs` after its request (one the store did not refuse:
 * written by a version that did not check, or under a longer APPROVAL_TIMEOUT_MS) is the
 * timeout's denial, fail closed.
 */
export function ledgerDecision(
  call: Pick<ToolCallStatus, "decision" | "decisionReason" | "approvalRequestedAt" | "decidedAt">,
  timeoutMs: number,
): ToolCallDecision | null {
  if (!call.decision) return null;
  const late =
    call.decision === "approve" &&
    call.decidedAt !== null &&
    pastApprovalTimeout(call.approvalRequestedAt, call.decidedAt, timeoutMs);
  if (late) return { decision: "deny", reason: approvalTimedOut(timeoutMs) };
  return { decision: call.decision, reason: call.decisionReason };
}

/** The call an `approval.resolved` event read back from storage resolved. */
const ResolvedCall = z.object({ toolCallId: z.string() });

/** Whether the run's stored events announce a decision for the call already. */
export async function resolvedBefore(store: Store, runId: string, toolCallId: string): Promise<boolean> {
  const resolved = await store.events.ofType(runId, "approval.resolved");
  return resolved.some((event) => ResolvedCall.safeParse(JSON.parse(event.data)).data?.toolCallId === toolCallId);
}
