import { ApprovalPolicySchema } from "../domain/approval-policy.js";
import { type ResolvedWebhookTarget, StoredResolvedTargetSchema } from "../domain/webhook.js";
import type { Db } from "./database.js";
import { parseOptionalJsonColumn } from "./json.js";
import type { RunLimits, RunRecord } from "./runs.js";

/**
 * The run an idempotency key started, as a start repeated under the key is compared with it
 * (see `runs.keyed`): its settings, and whether its input is the request's, compared in the
 * database. Its input (up to 1 MB) is not read: a repeat with other input is refused without it.
 */
export interface KeyedRun extends Pick<RunRecord, "id" | "maxTurns" | "contextMaxChars" | "approval">, RunLimits {
  sameInput: boolean;
  /** The target its start resolved (see ResolvedWebhookTarget); null: none. */
  webhook: ResolvedWebhookTarget | null;
}

/**
 * The statement reading the run of session `params.session` with key `params.key`, its input
 * compared with `params.input` (each a placeholder of the dialect); the same SQL over SQLite and
 * PostgreSQL.
 */
export function keyedRunSql(params: { session: string; key: string; input: string }): string {
  return `SELECT id, input = ${params.input} AS same_input, max_turns, context_max_chars, approval, max_tokens,
      max_duration_ms, max_tool_calls, loop_repeat_limit, planning, webhook
    FROM runs WHERE session_id = ${params.session} AND idempotency_key = ${params.key}`;
}

/** A comparison's result as the dialect returns it: SQLite's 1 or 0, PostgreSQL's boolean. */
const isTrue = (value: number | boolean): boolean => value === 1 || value === true;

export interface KeyedRunRow {
  id: string;
  /** SQLite's 1 or 0, PostgreSQL's boolean. */
  same_input: number | boolean;
  max_turns: number;
  context_max_chars: number | null;
  approval: string | null;
  max_tokens: number | null;
  max_duration_ms: number | null;
  max_tool_calls: number | null;
  loop_repeat_limit: number;
  planning: number;
  webhook: string | null;
}

export function keyedRunFromRow(row: KeyedRunRow): KeyedRun {
  return {
    id: row.id,
    sameInput: isTrue(row.same_input),
    maxTurns: row.max_turns,
    contextMaxChars: row.context_max_chars,
    approval: parseOptionalJsonColumn(ApprovalPolicySchema, row.approval, `run ${row.id} approval`),
    maxTokens: row.max_tokens,
    maxDurationMs: row.max_duration_ms,
    maxToolCalls: row.max_tool_calls,
    loopRepeatLimit: row.loop_repeat_limit,
    planning: row.planning === 1,
    webhook: parseOptionalJsonColumn(StoredResolvedTargetSchema, row.webhook, `run ${row.id} webhook`),
  };
}

/** Whose a run is and whether its input is the one a request carries, compared in the database (see `runs.inputHolds`). */
export interface RunInputHold {
  sessionId: string;
  same: boolean;
}

/** The statement comparing run `params.id`'s input with `params.input` (placeholders of the dialect). */
export function runInputSql(params: { id: string; input: string }): string {
  return `SELECT session_id, input = ${params.input} AS same_input FROM runs WHERE id = ${params.id}`;
}

export function runInputHoldFromRow(row: { session_id: string; same_input: number | boolean }): RunInputHold {
  return { sessionId: row.session_id, same: isTrue(row.same_input) };
}

/** SQLite: a run looked up to be compared with a repeated request, its input compared in the database, never read. */
export function keyedRunStore(db: Db) {
  const byKey = db.prepare(keyedRunSql({ session: "@session", key: "@key", input: "@input" }));
  const inputOf = db.prepare(runInputSql({ id: "@id", input: "@input" }));
  return {
    keyed(sessionId: string, key: string, input: string): KeyedRun | null {
      const row = byKey.get({ session: sessionId, key, input }) as KeyedRunRow | undefined;
      return row ? keyedRunFromRow(row) : null;
    },
    inputHolds(id: string, input: string): RunInputHold | null {
      const row = inputOf.get({ id, input }) as { session_id: string; same_input: number } | undefined;
      return row ? runInputHoldFromRow(row) : null;
    },
  };
}
