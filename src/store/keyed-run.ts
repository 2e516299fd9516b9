import { ApprovalPolicySchema } from "../domain/approval-policy.js";
import { parseOptionalJsonColumn } from "./json.js";
import type { RunLimits, RunRecord } from "./runs.js";

/**
 * The run an idempotency key started, as a start repeated under the key is compared with it
 * (see `runs.keyed`): its settings, and whether its input is the request's, compared in the
 * database. Its input (up to 1 MB) is not read: a repeat with other input is refused without it.
 */
export interface KeyedRun extends Pick<RunRecord, "id" | "maxTurns" | "contextMaxChars" | "approval">, RunLimits {
  sameInput: boolean;
}

/**
 * The statement reading the run of session `params.session` with key `params.key`, its input
 * compared with `params.input` (each a placeholder of the dialect); the same SQL over SQLite and
 * PostgreSQL.
 */
export function keyedRunSql(params: { session: string; key: string; input: string }): string {
  return `SELECT id, input = ${params.input} AS same_input, max_turns, context_max_chars, approval, max_tokens,
      max_duration_ms, max_tool_calls, loop_repeat_limit, planning
    FROM runs WHERE session_id = ${params.session} AND idempotency_key = ${params.key}`;
}

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
}

export function keyedRunFromRow(row: KeyedRunRow): KeyedRun {
  return {
    id: row.id,
    sameInput: row.same_input === 1 || row.same_input === true,
    maxTurns: row.max_turns,
    contextMaxChars: row.context_max_chars,
    approval: parseOptionalJsonColumn(ApprovalPolicySchema, row.approval, `run ${row.id} approval`),
    maxTokens: row.max_tokens,
    maxDurationMs: row.max_duration_ms,
    maxToolCalls: row.max_tool_calls,
    loopRepeatLimit: row.loop_repeat_limit,
    planning: row.planning === 1,
  };
}
