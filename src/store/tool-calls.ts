import type { ToolCall } from "../agent/messages.js";
import type { Db } from "./database.js";

export type ToolCallState = "proposed" | "awaiting_approval" | "approved" | "denied" | "started" | "finished";

/** One row of the tool-call ledger: what happened to a proposed call. */
export interface ToolCallRecord {
  runId: string;
  id: string;
  name: string;
  input: string;
  state: ToolCallState;
  decision: "approve" | "deny" | null;
  decisionReason: string | null;
  approvalReason: string | null;
  /** When approval was asked: the approval timeout counts from here. */
  approvalRequestedAt: string | null;
  proposedAt: string;
  decidedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  resultMessageId: string | null;
}

export interface ToolCallRow {
  run_id: string;
  id: string;
  name: string;
  input: string;
  state: ToolCallState;
  decision: "approve" | "deny" | null;
  decision_reason: string | null;
  approval_reason: string | null;
  approval_requested_at: string | null;
  proposed_at: string;
  decided_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  result_message_id: string | null;
}

/** A call's ledger row without its input (up to the model's whole argument text): see `toolCalls.status`. */
export type ToolCallStatus = Omit<ToolCallRecord, "input">;

/** Every column of the ledger but `input`, as `toolCalls.status` reads them (the same SQL on both backends). */
export const STATUS_COLUMNS = `run_id, id, name, state, decision, decision_reason, approval_reason, approval_requested_at,
  proposed_at, decided_at, started_at, finished_at, result_message_id`;

export const toolCallFromRow = (row: ToolCallRow): ToolCallRecord => ({
  ...toolCallStatusFromRow(row),
  input: row.input,
});

export const toolCallStatusFromRow = (row: Omit<ToolCallRow, "input">): ToolCallStatus => ({
  runId: row.run_id,
  id: row.id,
  name: row.name,
  state: row.state,
  decision: row.decision,
  decisionReason: row.decision_reason,
  approvalReason: row.approval_reason,
  approvalRequestedAt: row.approval_requested_at,
  proposedAt: row.proposed_at,
  decidedAt: row.decided_at,
  startedAt: row.started_at,
  finishedAt: row.finished_at,
  resultMessageId: row.result_message_id,
});

/**
 * Whether a decision taken at `at` comes later than `timeoutMs` after the call's request for
 * approval (`requestedAt`; null: approval was never asked): the approval timeout has denied it.
 */
export const pastApprovalTimeout = (requestedAt: string | null, at: string, timeoutMs: number): boolean =>
  requestedAt !== null && Date.parse(at) - timeoutMs > Date.parse(requestedAt);

/**
 * The ids of call `id` of run `run` (placeholders of the dialect) and of the calls after it in
 * its reply, in order: those of its `reply` (the ordinal of the reply's first call, set when the
 * reply's calls are proposed) at its ordinal or after. Read from the ledger's keys, not from the
 * reply. Not from its time: two replies of a run can be proposed within one millisecond.
 *
 * A row without `reply` (written before migration 0017, or by an instance of the version before
 * it during a rolling restart) is read as before: with the calls of its run without one that
 * have its `proposed_at`, the reply's time. A reply's rows are written in one commit by one
 * instance, so they either all have it or none does.
 */
/**
 * A call of a reply as the chat shows it: its id, tool and argument text (empty for the call the
 * reply is asked from, which the chat has shown already: its input, up to the model's whole
 * argument text, is not read again).
 */
export interface ReplyCall {
  id: string;
  name: string;
  input: string;
}

export const REST_OF_REPLY_SQL = (run: string, id: string) =>
  `SELECT c.id, c.name, CASE WHEN c.id = x.id THEN '' ELSE c.input END AS input FROM tool_calls x JOIN tool_calls c ON c.run_id = x.run_id AND c.ordinal >= x.ordinal
     AND (c.reply = x.reply OR (x.reply IS NULL AND c.reply IS NULL AND c.proposed_at = x.proposed_at))
   WHERE x.run_id = ${run} AND x.id = ${id} ORDER BY c.ordinal`;

/** The ledger's statements; its writes run only inside a run's commit (see apply-change). */
export function toolCallStore(db: Db) {
  // A call's ordinal is its place among its run's calls: counted once per reply, not once per
  // call (a count per call made a reply of 10,000 calls quadratic, seconds on the event loop).
  const callsOf = db.prepare("SELECT count(*) FROM tool_calls WHERE run_id = ?").pluck();
  const propose = db.prepare(
    `INSERT INTO tool_calls (run_id, id, ordinal, reply, name, input, state, proposed_at)
     VALUES (@run, @id, @ordinal, @reply, @name, @input, 'proposed', @at)`,
  );
  const awaitApproval = db.prepare(
    `UPDATE tool_calls SET state = 'awaiting_approval', approval_reason = ?, approval_requested_at = ?
     WHERE run_id = ? AND id = ? AND state <> 'finished'`,
  );
  const decide = db.prepare(
    `UPDATE tool_calls SET state = CASE WHEN @decision = 'approve' THEN 'approved' ELSE 'denied' END,
       decision = @decision, decision_reason = @reason, decided_at = @at
     WHERE run_id = @run AND id = @id AND state IN ('proposed', 'awaiting_approval')
       AND NOT EXISTS (SELECT 1 FROM runs WHERE id = @run AND cancel_requested_at IS NOT NULL)`,
  );
  // A call that has its result never changes again (see the writes below).
  // Nor does a call start once its run's cancel was requested (by another request or instance).
  const start = db.prepare(
    `UPDATE tool_calls SET state = 'started', started_at = @at WHERE run_id = @run AND id = @id AND state <> 'finished'
       AND NOT EXISTS (SELECT 1 FROM runs WHERE id = @run AND cancel_requested_at IS NOT NULL)`,
  );
  const finish = db.prepare(
    `UPDATE tool_calls SET state = 'finished', finished_at = ?, result_message_id = ?
     WHERE run_id = ? AND id = ? AND state <> 'finished'`,
  );
  const finishUndecided = db.prepare(
    `UPDATE tool_calls SET state = 'finished', finished_at = ?, result_message_id = ?
     WHERE run_id = ? AND id = ? AND state <> 'finished' AND decision IS NULL`,
  );
  const one = db.prepare("SELECT * FROM tool_calls WHERE run_id = ? AND id = ?");
  const status = db.prepare(`SELECT ${STATUS_COLUMNS} FROM tool_calls WHERE run_id = ? AND id = ?`);
  const restOfReply = db.prepare(REST_OF_REPLY_SQL("+@run", "+@id"));
  const ofRun = db.prepare("SELECT * FROM tool_calls WHERE run_id = +? ORDER BY ordinal");
  const inState = db.prepare("SELECT * FROM tool_calls WHERE run_id = +? AND state = +? ORDER BY ordinal");
  const open = db.prepare("SELECT * FROM tool_calls WHERE run_id = +? AND state <> 'finished' ORDER BY ordinal");

  return {
    propose(runId: string, calls: readonly ToolCall[], at: string): void {
      // The reply is named by its first call's ordinal (see REST_OF_REPLY_SQL).
      const reply = callsOf.get(runId) as number;
      let ordinal = reply;
      for (const call of calls) {
        propose.run({ run: runId, id: call.id, ordinal: ordinal++, reply, name: call.name, input: call.input, at });
      }
    },
    /** Records a request for approval; false when the call has its result already (or is not in the ledger). */
    awaitApproval(runId: string, id: string, reason: string, at: string): boolean {
      return awaitApproval.run(reason, at, runId, id).changes > 0;
    },
    /** Records a decision; false when the call was already decided or is past deciding. */
    decide(runId: string, id: string, decision: "approve" | "deny", reason: string | null, at: string): boolean {
      return decide.run({ run: runId, id, decision, reason, at }).changes > 0;
    },
    /** Records a tool's start; false when the call has its result already (or is not in the ledger), or its run's cancel was requested. */
    start(runId: string, id: string, at: string): boolean {
      return start.run({ at, run: runId, id }).changes > 0;
    },
    /**
     * Records the call's result; false when it has one already (or is not in the ledger): one
     * result a call. `undecided`: also false when the call has a decision.
     */
    finish(runId: string, id: string, resultMessageId: string, at: string, undecided = false): boolean {
      return (undecided ? finishUndecided : finish).run(at, resultMessageId, runId, id).changes > 0;
    },
    get(runId: string, id: string): ToolCallRecord | null {
      const row = one.get(runId, id) as ToolCallRow | undefined;
      return row ? toolCallFromRow(row) : null;
    },
    status(runId: string, id: string): ToolCallStatus | null {
      const row = status.get(runId, id) as Omit<ToolCallRow, "input"> | undefined;
      return row ? toolCallStatusFromRow(row) : null;
    },
    restOfReply(runId: string, id: string): ReplyCall[] {
      return restOfReply.all({ run: runId, id }) as ReplyCall[];
    },
    ofRun(runId: string): ToolCallRecord[] {
      return (ofRun.all(runId) as ToolCallRow[]).map(toolCallFromRow);
    },
    /** The run's calls without a result yet, in order. */
    open(runId: string): ToolCallRecord[] {
      return (open.all(runId) as ToolCallRow[]).map(toolCallFromRow);
    },
    inState(runId: string, state: ToolCallState): ToolCallRecord[] {
      return (inState.all(runId, state) as ToolCallRow[]).map(toolCallFromRow);
    },
  };
}

export type ToolCallStore = ReturnType<typeof toolCallStore>;
