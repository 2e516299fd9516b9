import { z } from "zod";
import type { ToolCallDecision } from "../agent/approval.js";
import type { Store, ToolCallStatus } from "../store/store.js";

/** The reason of the denial the approval timeout (`timeoutMs`) gives a call nobody decided in time. */
export const approvalTimedOut = (timeoutMs: number): string =>
  `no decision within the approval timeout (${timeoutMs} ms)`;

/**
 * The decision a run takes from its ledger row `call`; null while the call is undecided. The
 * ledger's decision stands as stored: the store refused an approval later than the timeout
 * when it was written (see RunChange `toolCall.decided`), and one it took was in time then, so a
 * restart with a shorter APPROVAL_TIMEOUT_MS does not turn an answered approval into a denial.
 */
export function ledgerDecision(call: Pick<ToolCallStatus, "decision" | "decisionReason">): ToolCallDecision | null {
  return call.decision ? { decision: call.decision, reason: call.decisionReason } : null;
}

/** The call an `approval.resolved` event read back from storage resolved. */
const ResolvedCall = z.object({ toolCallId: z.string() });

/** Whether the run's stored events announce a decision for the call already. */
export async function resolvedBefore(store: Store, runId: string, toolCallId: string): Promise<boolean> {
  const resolved = await store.events.ofType(runId, "approval.resolved");
  return resolved.some((event) => ResolvedCall.safeParse(JSON.parse(event.data)).data?.toolCallId === toolCallId);
}
