import type { RunEvent } from "../../domain/run-events.js";
import type { RunChange } from "../changes.js";
import { approvalExpired, callClosed, cancelRequested, decidedMeanwhile, StoreConflictError } from "../errors.js";
import type { StoredEvent } from "../events.js";
import { toJson } from "../json.js";
import { messageColumns } from "../messages.js";
import { insertStatement, type Statement } from "./pg-batch.js";
import { EVENTS_CHANNEL } from "./pg-listener.js";

/**
 * The database's clock as the ISO text the ledger's times are stored in, `shift` (SQL of an
 * interval) before it. A request for approval and a decision on it are stamped with it, so that
 * an approval's lateness is judged on one clock, whichever instances asked and decided (their
 * own clocks may disagree by more than the approval timeout).
 */
const dbTimeIso = (shift = "") => `to_char((now()${shift}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The statements that apply one change of a run (the PostgreSQL twin of apply-change.ts):
 * the tool-call ledger is written only here.
 */
export function changeStatements(runId: string, change: RunChange): Statement[] {
  switch (change.kind) {
    case "message": {
      const { message } = change;
      const insert = insertStatement("messages", messageColumns(message));
      if (message.role === "assistant" && message.toolCalls?.length) {
        // One statement for the reply's calls, their run's calls counted once (a count per call
        // made a reply of many calls quadratic); each call's ordinal is its place after those, and
        // its reply the first call's ordinal, earlier.n (see REST_OF_REPLY_SQL).
        const calls = message.toolCalls;
        return [
          insert,
          {
            text: `INSERT INTO tool_calls (run_id, id, ordinal, reply, name, input, state, proposed_at)
                   SELECT $1, c.id, earlier.n + c.k - 1, earlier.n, c.name, c.input, 'proposed', $5
                   FROM (SELECT count(*) AS n FROM tool_calls WHERE run_id = $1) AS earlier,
                        unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS c(id, name, input, k)`,
            values: [
              runId,
              calls.map((call) => call.id),
              calls.map((call) => call.name),
              calls.map((call) => call.input),
              message.createdAt,
            ],
          },
        ];
      }
      if (message.role === "tool") {
        // One result a call: a second writer's batch waits for the first's lock on the call's
        // row, then finds it finished and is refused. Closed `undecided`, the row is locked
        // first (whatever it holds), and refused `decided` only when it holds a decision (a
        // decision's write waits for the lock, then finds the call finished). A call not in
        // the ledger has no decision: the UPDATE refuses it call_closed, as over SQLite.
        return [
          insert,
          ...(change.undecided
            ? [
                {
                  text: `SELECT 1
                         WHERE (SELECT decision FROM tool_calls WHERE run_id = $1 AND id = $2 FOR UPDATE) IS NULL`,
                  values: [runId, message.toolCallId],
                  orRefuse: () => decidedMeanwhile(message.toolCallId),
                },
              ]
            : []),
          {
            text: `UPDATE tool_calls SET state = 'finished', finished_at = $1, result_message_id = $2
                   WHERE run_id = $3 AND id = $4 AND state <> 'finished'`,
            values: [message.createdAt, message.id, runId, message.toolCallId],
            orRefuse: () => callClosed(runId, message.toolCallId),
          },
        ];
      }
      return [insert];
    }
    case "toolCall.awaitingApproval":
      return [
        {
          text: `UPDATE tool_calls SET state = 'awaiting_approval', approval_reason = $1,
                   approval_requested_at = ${dbTimeIso()}
                 WHERE run_id = $2 AND id = $3 AND state <> 'finished'`,
          values: [change.reason, runId, change.toolCallId],
          orRefuse: () => callClosed(runId, change.toolCallId),
        },
      ];
    case "toolCall.decided":
      return [
        // An approval later than its request's timeout is refused first (see RunChange).
        ...(change.decision === "approve" && change.approvalTimeoutMs !== undefined
          ? [
              {
                text: `SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM tool_calls WHERE run_id = $1 AND id = $2
                         AND state IN ('proposed', 'awaiting_approval')
                         AND approval_requested_at < ${dbTimeIso(" - $3 * interval '1 millisecond'")})`,
                values: [runId, change.toolCallId, change.approvalTimeoutMs],
                orRefuse: () => approvalExpired(change.toolCallId),
              },
            ]
          : []),
        {
          text: `UPDATE tool_calls SET state = CASE WHEN $1 = 'approve' THEN 'approved' ELSE 'denied' END,
                   decision = $1, decision_reason = $2, decided_at = ${dbTimeIso()}
                 WHERE run_id = $3 AND id = $4 AND state IN ('proposed', 'awaiting_approval')
                   AND NOT EXISTS (SELECT 1 FROM runs WHERE id = $3 AND cancel_requested_at IS NOT NULL)`,
          values: [change.decision, change.reason, runId, change.toolCallId],
          orRefuse: () => new StoreConflictError("decided", `tool call ${change.toolCallId} was already decided`),
        },
      ];
    case "toolCall.started":
      return [
        // No call starts once its run's cancel was requested (by another request or instance).
        {
          text: "SELECT 1 FROM runs WHERE id = $1 AND cancel_requested_at IS NULL",
          values: [runId],
          orRefuse: () => cancelRequested(runId),
        },
        {
          text: "UPDATE tool_calls SET state = 'started', started_at = $1 WHERE run_id = $2 AND id = $3 AND state <> 'finished'",
          values: [change.at, runId, change.toolCallId],
          orRefuse: () => callClosed(runId, change.toolCallId),
        },
      ];
    case "status":
      return [
        {
          text: `UPDATE runs SET status = $1::text, cancel_requested_by = coalesce(cancel_requested_by, $3::text)
                 WHERE id = $2 AND status <> 'finished' AND (cancel_requested_at IS NULL OR $1::text = 'cancelling')`,
          values: [change.status, runId, change.cancelledBy ?? null],
        },
      ];
    case "cancelRequested":
      return [
        {
          // The first request's time and words are kept, or the cause a cancel where the run executes
          // stored first (the right side reads the row as it was).
          text: `UPDATE runs SET status = 'cancelling', cancel_requested_at = coalesce(cancel_requested_at, $1),
                   cancel_requested_by = CASE WHEN cancel_requested_at IS NULL THEN coalesce(cancel_requested_by, $3::text)
                                         ELSE cancel_requested_by END
                 WHERE id = $2 AND status <> 'finished'`,
          values: [change.at, runId, change.by ?? null],
        },
      ];
    case "step":
      return [
        {
          text: `INSERT INTO run_steps (run_id, turn, data) VALUES ($1, $2, $3)
                 ON CONFLICT (run_id, turn) DO UPDATE SET data = excluded.data`,
          values: [runId, change.step.turn, JSON.stringify(change.step)],
        },
      ];
    case "stats":
      return [
        {
          text: "UPDATE runs SET stats = $1 WHERE id = $2 AND status <> 'finished'",
          values: [JSON.stringify(change.stats), runId],
        },
      ];
    case "duration":
      return [
        {
          text: `UPDATE runs SET stats = jsonb_set(stats::jsonb, '{durationMs}', to_jsonb($1::float8))::text
                 WHERE id = $2 AND status <> 'finished' AND (stats::jsonb ->> 'durationMs')::float8 < $1::float8`,
          values: [change.durationMs, runId],
        },
      ];
    case "input.taken":
      return [
        {
          text: "DELETE FROM run_inputs WHERE id = $1 AND run_id = $2",
          values: [change.inputId, runId],
          orRefuse: () =>
            new StoreConflictError("input_taken", `input ${change.inputId} is not pending for run ${runId}`),
        },
      ];
    case "finish":
      return [
        {
          text: `UPDATE runs SET status = 'finished', stop_reason = $1, stop_detail = $2, error = $3, stats = $4,
                   finished_at = $5 WHERE id = $6 AND status <> 'finished' AND ($7::text IS NULL OR status = $7)`,
          values: [
            change.stopReason,
            change.stopDetail,
            toJson(change.error),
            JSON.stringify(change.stats),
            change.finishedAt,
            runId,
            change.from ?? null,
          ],
          orRefuse: () => new StoreConflictError("run_not_live", `run ${runId} has already finished or is gone`),
        },
        // After the finish, which holds the run's row: a cancel request stored before it is seen
        // here, and one coming later finds the run finished (and is no request).
        {
          text: `SELECT 1 WHERE $1 = 'aborted'
                   OR NOT EXISTS (SELECT 1 FROM runs WHERE id = $2 AND cancel_requested_at IS NOT NULL)`,
          values: [change.stopReason, runId],
          orRefuse: () => cancelRequested(runId),
        },
      ];
  }
}

/**
 * The events as stored (their JSON exactly as it will be replayed) and the one statement
 * inserting them, which also announces them (`runId:lastSeq` on the events channel; sent when
 * the batch commits, never when it is refused). The events of one batch are of one run.
 */
export function eventRows(events: readonly RunEvent[]): { stored: StoredEvent[]; statement: Statement | null } {
  const stored = events.map((event) => ({ seq: event.seq, type: event.type, data: JSON.stringify(event) }));
  if (events.length === 0) return { stored, statement: null };
  const lastSeq = stored.reduce((max, event) => Math.max(max, event.seq), 0);
  return {
    stored,
    statement: {
      text: `WITH inserted AS (
               INSERT INTO run_events (run_id, seq, type, data)
               SELECT * FROM unnest($1::text[], $2::integer[], $3::text[], $4::text[]))
             SELECT pg_notify($5, $6)`,
      values: [
        events.map((e) => e.runId),
        stored.map((e) => e.seq),
        stored.map((e) => e.type),
        stored.map((e) => e.data),
        EVENTS_CHANNEL,
        `${events[0]?.runId}:${lastSeq}`,
      ],
    },
  };
}
