import type { ToolMessage } from "../agent/messages.js";
import type { RunEventBody } from "../domain/run-events.js";
import { callClosed, isConflict } from "../store/errors.js";
import type { Store, ToolCallStatus } from "../store/store.js";
import { resolvedBefore } from "./approval-ledger.js";
import type { LiveRun } from "./live-run.js";
import type { WriteBatch } from "./run-write.js";

/**
 * Commits the result of a call whose approval the run stopped waiting for, undecided as far as
 * it knows (cancelled, or out of wall time, before a decision reached it), with `also` (its
 * stats, and what else the write carries) after it. The ledger arbitrates between instances:
 * a decision another instance stored first (and answered 200) stands, so the close is then
 * refused (`decided`), and the result is written again with that decision announced before it
 * (`approval.resolved`, unless the run's events already hold it), in one write. A decision that
 * comes after the close is refused by the ledger. Reads nothing unless the close was refused.
 */
export async function commitUndecidedResult(
  store: Store,
  live: LiveRun,
  message: ToolMessage,
  also: { tool?: string; ran?: boolean } & WriteBatch,
): Promise<void> {
  const write = (undecided: boolean, announce: RunEventBody[]) =>
    live.recorder.write((stamp) => {
      const stored = stamp(message);
      return {
        changes: [{ kind: "message", message: stored, tool: also.tool, ran: also.ran, undecided }, ...also.changes],
        events: [...announce, { type: "message", message: stored }, ...also.events],
      };
    });
  try {
    await write(true, []);
    return;
  } catch (err) {
    if (!isConflict(err, "decided")) throw err;
  }
  const { toolCallId } = message;
  const call = await store.toolCalls.status(live.id, toolCallId);
  if (!call?.decision) throw callClosed(live.id, toolCallId);
  await write(false, await ledgerAnnouncement(store, call));
}

/**
 * The `approval.resolved` of the decision the ledger holds for `call` (none when it holds none),
 * unless the run's events announce it already: one another instance stored while no process
 * executed the run (its owner lost) never was. To be written before the call's result.
 */
export async function ledgerAnnouncement(
  store: Store,
  call: Pick<ToolCallStatus, "runId" | "id" | "decision" | "decisionReason">,
): Promise<RunEventBody[]> {
  const { runId, id: toolCallId, decision, decisionReason: reason } = call;
  if (!decision || (await resolvedBefore(store, runId, toolCallId))) return [];
  return [{ type: "approval.resolved", toolCallId, decision, reason }];
}
