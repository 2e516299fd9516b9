import type { BeforeToolCall, ToolCallDecision } from "../agent/approval.js";
import { type ApprovalCeiling, clampToCeiling } from "../domain/approval-ceiling.js";
import { evaluateApproval } from "../domain/approval-policy.js";
import { isConflict } from "../store/errors.js";
import type { RunChange, Store } from "../store/store.js";
import { approvalTimedOut, ledgerDecision, resolvedBefore } from "./approval-ledger.js";
import type { LiveRun } from "./live-run.js";
import type { WriteBatch } from "./run-write.js";

export interface ApprovalDeps {
  store: Store;
  approvalTimeoutMs: number;
  /** APPROVAL_POLICY_MAX: every call is at least as strict as it, whatever the stored policies say. */
  approvalCeiling?: ApprovalCeiling;
}

/** The run now waits for a person: its phase, and the status change that goes with the request. */
function awaitingApproval(live: LiveRun): RunChange[] {
  if (live.phase.name !== "running") return [];
  live.phase = { name: "awaiting_approval" };
  return [{ kind: "status", status: "awaiting_approval" }];
}

/** What the gate answers once the run is cancelled: the loop no longer waits for it (see BeforeToolCall). */
const CANCELLED: ToolCallDecision = { decision: "deny", reason: "the run was cancelled" };

/**
 * A write of the gate's, decided at its turn: nothing once the run is cancelled or the gate's
 * `signal` fired (the run's wall-time budget is spent), as its loop has closed the call (see
 * BeforeToolCall) and its result, or the run's end, may be written before this: a request
 * after it would reopen a closed call, an announcement follow the end.
 */
const unlessStopped = (live: LiveRun, signal: AbortSignal, build: () => WriteBatch) => (): WriteBatch =>
  live.controller.signal.aborted || signal.aborted ? { changes: [], events: [] } : build();

/** Whether deciding `toolCallId` leaves the run with nothing to wait for. */
const lastWaiting = (live: LiveRun, toolCallId: string): boolean =>
  live.phase.name === "awaiting_approval" && live.waiters.size === 1 && live.waiters.has(toolCallId);

/** Wakes the loop waiting for `toolCallId`; the run is running again once nothing waits. */
function wake(live: LiveRun, toolCallId: string, decision: ToolCallDecision): void {
  live.waiters.settle(toolCallId, decision);
  if (live.phase.name === "awaiting_approval" && live.waiters.size === 0) live.phase = { name: "running", tool: null };
}

/**
 * The loop no longer waits for `toolCallId` (the gate's signal fired: the run's wall-time
 * budget is spent; a cancel forgets every waiter itself): no decision is taken for it any more,
 * and the run is running again (stored too) once nothing waits.
 */
function stopWaiting(live: LiveRun, toolCallId: string): void {
  if (!live.waiters.has(toolCallId)) return;
  const running = lastWaiting(live, toolCallId);
  live.waiters.forget(toolCallId);
  if (!running) return;
  live.phase = { name: "running", tool: null };
  // Unstored, the status is corrected by the run's end, which the loop writes next.
  live.recorder
    .write(() => ({
      changes: live.phase.name === "running" ? [{ kind: "status", status: "running" }] : [],
      events: [],
    }))
    .catch(() => {});
}

/**
 * Records a decision for a call that waits for approval (ledger row, run status and
 * `approval.resolved` event in one write), then wakes the waiting loop. The write is queued
 * before this returns its promise. Rejects with StoreConflictError `decided` when the ledger
 * already holds a decision, or `approval_expired` for an approval later than `approvalTimeoutMs`
 * after the request; then nothing was written.
 */
export async function resolveApproval(live: LiveRun, decided: Decided): Promise<void> {
  const { toolCallId, decision, reason } = decided;
  await live.recorder.write(() => decidedBatch(decided, lastWaiting(live, toolCallId)));
  wake(live, toolCallId, { decision, reason });
}

/** A decision on call `toolCallId`, taken under APPROVAL_TIMEOUT_MS `approvalTimeoutMs`. */
type Decided = { toolCallId: string; approvalTimeoutMs: number } & ToolCallDecision;

/** A decision's write: the ledger row, `approval.resolved`, and the run running again if `running`. */
function decidedBatch(decided: Decided, running: boolean): WriteBatch {
  const { toolCallId, decision, approvalTimeoutMs } = decided;
  const reason = decided.reason ?? null;
  const at = new Date().toISOString();
  return {
    changes: [
      { kind: "toolCall.decided", toolCallId, decision, reason, at, approvalTimeoutMs },
      ...(running ? [{ kind: "status" as const, status: "running" as const }] : []),
    ],
    events: [{ type: "approval.resolved", toolCallId, decision, reason }],
  };
}

/**
 * A decision another instance wrote in the ledger for a call this run waits on: the
 * `approval.resolved` event (with the run's status) is queued and the loop woken at once, so
 * the event precedes whatever the loop writes next. Nothing happens when nothing waits for it.
 */
export async function applyLedgerDecision(
  live: LiveRun,
  {
    toolCallId,
    decision,
    announced = false,
  }: {
    toolCallId: string;
    decision: ToolCallDecision;
    /** Its `approval.resolved` is stored already: only the run's status and the loop's wake are left. */
    announced?: boolean;
  },
): Promise<void> {
  if (!live.waiters.has(toolCallId)) return;
  const running = lastWaiting(live, toolCallId);
  const written = live.recorder.write(() => ({
    changes: running ? [{ kind: "status", status: "running" }] : [],
    events: announced
      ? []
      : [{ type: "approval.resolved", toolCallId, decision: decision.decision, reason: decision.reason ?? null }],
  }));
  wake(live, toolCallId, decision);
  await written;
}

/** A decision the gate of run `live` takes for a call, while `signal` (the gate's) has not fired. */
interface GateDecision {
  live: LiveRun;
  toolCallId: string;
  decision: ToolCallDecision;
  signal: AbortSignal;
}

/**
 * A decision a resumed run finds in its ledger is announced (`approval.resolved`, the run
 * running again) unless it already was: one written by another instance while no process
 * executed the run (its owner lost) never was.
 */
async function announceLedgerDecision(
  deps: ApprovalDeps,
  { live, toolCallId, decision, signal }: GateDecision,
): Promise<void> {
  if (await resolvedBefore(deps.store, live.id, toolCallId)) return;
  await live.recorder.write(
    unlessStopped(live, signal, () => ({
      changes: live.phase.name === "running" ? [{ kind: "status", status: "running" }] : [],
      events: [{ type: "approval.resolved", toolCallId, decision: decision.decision, reason: decision.reason ?? null }],
    })),
  );
}

/**
 * A call asked before a restart that the policy now decides (a stricter ceiling, say): the
 * decision is recorded and announced (`approval.resolved`), as a person's would be, so that
 * clients withdraw the question. A decision a person wrote meanwhile wins (and is announced).
 * An approval later than the request's timeout is the timeout's denial, as a person's is.
 */
async function closeAsked(deps: ApprovalDeps, gated: GateDecision): Promise<ToolCallDecision> {
  const { live, toolCallId, decision, signal } = gated;
  const approvalTimeoutMs = deps.approvalTimeoutMs;
  try {
    await live.recorder.write(
      unlessStopped(live, signal, () =>
        decidedBatch({ toolCallId, ...decision, approvalTimeoutMs }, live.phase.name === "running"),
      ),
    );
    return decision;
  } catch (err) {
    const timedOut: ToolCallDecision = { decision: "deny", reason: approvalTimedOut(approvalTimeoutMs) };
    if (isConflict(err, "approval_expired")) return closeAsked(deps, { ...gated, decision: timedOut });
    if (!isConflict(err, "decided")) throw err;
    const ledger = await deps.store.toolCalls.get(live.id, toolCallId);
    const stored = ledger && ledgerDecision(ledger);
    if (!stored) throw err;
    await announceLedgerDecision(deps, { live, toolCallId, decision: stored, signal });
    return stored;
  }
}

/**
 * The `beforeToolCall` of a run: applies the approval policy, and for `ask` records the
 * request and waits for a person, or for the timeout (which denies), counted from the
 * request's stored time: a restart does not start it over. The ledger is the truth: a
 * decision already in it (a resumed run) is reused, never asked twice.
 */
export function approvalGate(deps: ApprovalDeps, live: LiveRun): BeforeToolCall {
  return async ({ toolCall, tool, input, signal }) => {
    const ledger = live.resumed ? await deps.store.toolCalls.get(live.id, toolCall.id) : null;
    // Cancelled while the ledger was read: the loop has closed the call already.
    if (signal.aborted) return CANCELLED;
    const stored = ledger && ledgerDecision(ledger);
    if (stored) {
      // An approval stored before the operator's ceiling came to deny the tool (a restart with a
      // stricter APPROVAL_POLICY_MAX) is not used: the ceiling wins over any decision.
      const overruled =
        stored.decision === "approve" && clampToCeiling("allow", tool.name, deps.approvalCeiling) === "deny";
      const decision: ToolCallDecision = overruled
        ? { decision: "deny", reason: `the approval policy denies ${tool.name}` }
        : stored;
      await announceLedgerDecision(deps, { live, toolCallId: toolCall.id, decision, signal });
      return decision;
    }

    const mode = clampToCeiling(
      evaluateApproval({
        tool: tool.name,
        readOnly: tool.readOnly,
        session: live.session.approval,
        run: live.record.approval,
      }),
      tool.name,
      deps.approvalCeiling,
    );
    const asked = ledger?.state === "awaiting_approval";
    if (mode !== "ask") {
      const decision: ToolCallDecision =
        mode === "allow"
          ? { decision: "approve" }
          : { decision: "deny", reason: `the approval policy denies ${tool.name}` };
      // Asked before a restart whose policy now decides it: the question is closed as decided.
      return asked ? closeAsked(deps, { live, toolCallId: toolCall.id, decision, signal }) : decision;
    }

    const requestedAt = (asked ? ledger.approvalRequestedAt : null) ?? new Date().toISOString();
    const remainingMs = Math.max(0, Date.parse(requestedAt) + deps.approvalTimeoutMs - Date.now());
    // The waiter exists before the request is visible, so a decision can never find none.
    const decided = live.waiters.wait(toolCall.id, {
      timeoutMs: remainingMs,
      onTimeout: () => void timeOut(deps, live, toolCall.id),
    });
    const onStop = () => stopWaiting(live, toolCall.id);
    signal.addEventListener("abort", onStop, { once: true });
    void decided.then(() => signal.removeEventListener("abort", onStop));
    const reason = `${tool.name} requires approval`;
    try {
      await live.recorder.write(
        unlessStopped(live, signal, () => ({
          changes: [
            ...(asked
              ? []
              : [{ kind: "toolCall.awaitingApproval" as const, toolCallId: toolCall.id, reason, at: requestedAt }]),
            ...awaitingApproval(live),
          ],
          events: asked
            ? []
            : [{ type: "approval.requested", toolCallId: toolCall.id, tool: tool.name, input, reason }],
        })),
      );
    } catch (err) {
      live.waiters.forget(toolCall.id);
      throw err;
    }
    if (signal.aborted) {
      live.waiters.forget(toolCall.id);
      return CANCELLED;
    }
    if (asked) {
      // A decision written while this run was on its way here (after a restart) is in the ledger.
      // Announced already when it was written here, for this run, before its waiter existed.
      const again = await deps.store.toolCalls.get(live.id, toolCall.id);
      const decision = again && ledgerDecision(again);
      if (decision) {
        const announced = await resolvedBefore(deps.store, live.id, toolCall.id);
        await applyLedgerDecision(live, { toolCallId: toolCall.id, decision, announced });
      }
    }
    return decided;
  };
}

/** No decision in time: denied (fail closed), recorded when possible; a decision that won the race stands. */
async function timeOut(deps: ApprovalDeps, live: LiveRun, toolCallId: string): Promise<void> {
  const reason = approvalTimedOut(deps.approvalTimeoutMs);
  try {
    await resolveApproval(live, { toolCallId, decision: "deny", reason, approvalTimeoutMs: deps.approvalTimeoutMs });
  } catch (err) {
    const stored = isConflict(err, "decided")
      ? await deps.store.toolCalls.get(live.id, toolCallId).catch(() => null)
      : null;
    const decision = stored && ledgerDecision(stored);
    if (decision) {
      // Decided elsewhere meanwhile (by another instance): that decision is recorded and stands.
      await applyLedgerDecision(live, { toolCallId, decision }).catch(() => wake(live, toolCallId, decision));
    } else if (stored && (await deps.store.runs.cancelRequested([live.id]).catch(() => [])).length > 0) {
      // Refused because another instance stored the run's cancel: the run ends aborted, undecided.
      live.cancelStored();
    } else wake(live, toolCallId, { decision: "deny", reason });
  }
}
