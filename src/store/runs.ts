import { z } from "zod";
import { DEFAULT_LOOP_REPEAT_LIMIT } from "../agent/loop-guard.js";
import type { Plan } from "../agent/plan.js";
import type { RunStats } from "../agent/stats.js";
import type { StopReason } from "../agent/stop-reason.js";
import { type ApprovalPolicy, ApprovalPolicySchema } from "../domain/approval-policy.js";
import type { RunStatus, RunView } from "../domain/run.js";
import { type ResolvedWebhookTarget, StoredResolvedTargetSchema } from "../domain/webhook.js";
import type { RunChange } from "./changes.js";
import type { Db } from "./database.js";
import { StoreConflictError } from "./errors.js";
import { parseJsonColumn, parseOptionalJsonColumn, toJson } from "./json.js";
import { type ListPage, PAGE_BYTES, readSizedPage } from "./page.js";
import { RUN_ACCESS_COLUMNS, type RunAccess, type RunAccessRow, runAccessFromRow } from "./run-access.js";

export type { RunAccess } from "./run-access.js";

type FinishChange = Extract<RunChange, { kind: "finish" }>;

/** The session's active run as `runs.active` reads it (ACTIVE_COLUMNS): its id and key, not its input (up to 1 MB). */
export type ActiveRun = Pick<RunRecord, "id" | "idempotencyKey">;
export const ACTIVE_COLUMNS = "id, idempotency_key";
/** A run as stored; its plan is not stored but derived from its messages (see `runView`). */
export interface RunRecord extends Omit<RunView, "plan"> {
  approval: ApprovalPolicy | null;
  idempotencyKey: string | null;
  /** Where this run's events are posted: resolved at its start, null for nowhere. */
  webhook: ResolvedWebhookTarget | null;
}

/** What a run may spend and how it is guarded, fixed when it starts. */
export type RunLimits = Pick<
  RunRecord,
  "maxTokens" | "maxDurationMs" | "maxToolCalls" | "loopRepeatLimit" | "planning"
>;

/** No budgets, the default loop guard, no planning: a run nobody set limits for. */
export const defaultRunLimits = (): RunLimits => ({
  maxTokens: null,
  maxDurationMs: null,
  maxToolCalls: null,
  loopRepeatLimit: DEFAULT_LOOP_REPEAT_LIMIT,
  planning: false,
});

/**
 * The stored bytes of the columns of a run its view shows that vary (see rowsToRead); the same
 * SQL over SQLite and PostgreSQL. A run's plan is not stored (see `runView`).
 */
export const RUN_BYTES_SQL = `octet_length(id) + octet_length(session_id) + octet_length(input) + octet_length(stats)
  + coalesce(octet_length(error), 0) + coalesce(octet_length(stop_detail), 0)`;

export interface RunRow {
  id: string;
  session_id: string;
  status: RunStatus;
  stop_reason: StopReason | null;
  stop_detail: string | null;
  error: string | null;
  input: string;
  max_turns: number;
  context_max_chars: number | null;
  max_tokens: number | null;
  max_duration_ms: number | null;
  max_tool_calls: number | null;
  loop_repeat_limit: number;
  planning: number;
  approval: string | null;
  idempotency_key: string | null;
  stats: string;
  created_at: string;
  finished_at: string | null;
  webhook: string | null;
}

const RunErrorSchema = z.object({ code: z.string(), message: z.string() });
const RunStatsSchema = z.object({
  modelCalls: z.number(),
  toolCalls: z.number(),
  turns: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  durationMs: z.number(),
});

/** A row read back, checked (JSON columns against their schemas). */
export function runFromRow(row: RunRow): RunRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    status: row.status,
    stopReason: row.stop_reason,
    stopDetail: row.stop_detail,
    error: parseOptionalJsonColumn(RunErrorSchema, row.error, `run ${row.id} error`),
    input: row.input,
    maxTurns: row.max_turns,
    contextMaxChars: row.context_max_chars,
    maxTokens: row.max_tokens,
    maxDurationMs: row.max_duration_ms,
    maxToolCalls: row.max_tool_calls,
    loopRepeatLimit: row.loop_repeat_limit,
    planning: row.planning === 1,
    stats: parseJsonColumn(RunStatsSchema, row.stats, `run ${row.id} stats`),
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    approval: parseOptionalJsonColumn(ApprovalPolicySchema, row.approval, `run ${row.id} approval`),
    idempotencyKey: row.idempotency_key,
    webhook: parseOptionalJsonColumn(StoredResolvedTargetSchema, row.webhook, `run ${row.id} webhook`),
  };
}

/** The public view of a run record (drops the fields clients did not send back), with its plan. */
export function runView(record: RunRecord, plan: Plan | null = null): RunView {
  const { approval: _approval, idempotencyKey: _key, webhook: _webhook, ...view } = record;
  return { ...view, plan };
}

/** The columns a new run is inserted with (the others start NULL). */
export function runColumns(run: RunRecord) {
  return {
    id: run.id,
    session_id: run.sessionId,
    status: run.status,
    input: run.input,
    max_turns: run.maxTurns,
    context_max_chars: run.contextMaxChars,
    max_tokens: run.maxTokens,
    max_duration_ms: run.maxDurationMs,
    max_tool_calls: run.maxToolCalls,
    loop_repeat_limit: run.loopRepeatLimit,
    planning: run.planning ? 1 : 0,
    approval: toJson(run.approval),
    idempotency_key: run.idempotencyKey,
    stats: JSON.stringify(run.stats),
    created_at: run.createdAt,
    webhook: toJson(run.webhook),
  };
}

export function runStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO runs (id, session_id, status, stop_reason, error, input, max_turns, context_max_chars, max_tokens,
       max_duration_ms, max_tool_calls, loop_repeat_limit, planning, approval, idempotency_key, stats, created_at,
       finished_at, webhook)
     VALUES (@id, @session_id, @status, NULL, NULL, @input, @max_turns, @context_max_chars, @max_tokens,
       @max_duration_ms, @max_tool_calls, @loop_repeat_limit, @planning, @approval, @idempotency_key, @stats,
       @created_at, NULL, @webhook)`,
  );
  const byId = db.prepare("SELECT * FROM runs WHERE id = ?");
  const accessOf = db.prepare(
    `SELECT ${RUN_ACCESS_COLUMNS} FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = +?`,
  );
  const active = db.prepare(
    `SELECT ${ACTIVE_COLUMNS} FROM runs WHERE session_id = +? AND status NOT IN ('finished', 'queued') ORDER BY id LIMIT 1`,
  );
  const live = db.prepare("SELECT * FROM runs WHERE status NOT IN ('finished', 'queued') ORDER BY id");
  const unfinishedOf = db
    .prepare(
      "SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id WHERE s.owner = +? AND r.status <> 'finished'",
    )
    .pluck();
  // First page and later pages apart, so a cursor bounds the index range (see sessions.ts).
  const firstPage = db.prepare("SELECT * FROM runs WHERE session_id = +@session ORDER BY id DESC LIMIT +@limit");
  const pageAfter = db.prepare(
    "SELECT * FROM runs WHERE session_id = +@session AND id < +@cursor ORDER BY id DESC LIMIT +@limit",
  );
  // The sizes of the rows a page may hold, before the rows themselves (see rowsToRead).
  const firstSizes = db
    .prepare(`SELECT ${RUN_BYTES_SQL} FROM runs WHERE session_id = +@session ORDER BY id DESC LIMIT +@limit`)
    .pluck();
  const sizesAfter = db
    .prepare(
      `SELECT ${RUN_BYTES_SQL} FROM runs WHERE session_id = +@session AND id < +@cursor ORDER BY id DESC LIMIT +@limit`,
    )
    .pluck();
  const setStatus = db.prepare(
    `UPDATE runs SET status = @status, cancel_requested_by = coalesce(cancel_requested_by, @by)
     WHERE id = @id AND status <> 'finished' AND (cancel_requested_at IS NULL OR @status = 'cancelling')`,
  );
  // The first request's time and words are kept, or the cause a cancel where the run executes
  // stored first (the right side reads the row as it was).
  const requestCancel = db.prepare(
    `UPDATE runs SET status = 'cancelling', cancel_requested_at = coalesce(cancel_requested_at, @at),
       cancel_requested_by = CASE WHEN cancel_requested_at IS NULL THEN coalesce(cancel_requested_by, @by) ELSE cancel_requested_by END
     WHERE id = @id AND status <> 'finished'`,
  );
  const cancelRequested = db.prepare(
    "SELECT id FROM runs WHERE id IN (SELECT value FROM json_each(?)) AND cancel_requested_at IS NOT NULL AND status <> 'finished'",
  );
  const saveStats = db.prepare("UPDATE runs SET stats = ? WHERE id = ? AND status <> 'finished'");
  const saveDuration = db.prepare(
    "UPDATE runs SET stats = json_set(stats, '$.durationMs', @ms) WHERE id = @id AND status <> 'finished' AND stats ->> 'durationMs' < @ms",
  );
  const finish = db.prepare(
    `UPDATE runs SET status = 'finished', stop_reason = @stop_reason, stop_detail = @stop_detail, error = @error,
       stats = @stats, finished_at = @finished_at
     WHERE id = @id AND status <> 'finished' AND (@from IS NULL OR status = @from)
       AND (@stop_reason = 'aborted' OR cancel_requested_at IS NULL)`,
  );
  // Whether an end `finish` refused was refused for the cancel requested: a live run, in status
  // `from` if given, and an end but `aborted` (else it is not live; see RunChange "finish").
  const cancelledLive = db
    .prepare(
      `SELECT 1 FROM runs WHERE id = @id AND status <> 'finished' AND (@from IS NULL OR status = @from)
         AND @stop_reason <> 'aborted' AND cancel_requested_at IS NOT NULL`,
    )
    .pluck();

  return {
    /** Inserts the run; for a session deleted meanwhile (its foreign key broken), the conflict session_gone. */
    insert(run: RunRecord): void {
      try {
        insert.run(runColumns(run));
      } catch (err) {
        if ((err as { code?: unknown }).code !== "SQLITE_CONSTRAINT_FOREIGNKEY") throw err;
        throw new StoreConflictError("session_gone", `session ${run.sessionId} was deleted`);
      }
    },
    get(id: string): RunRecord | null {
      const row = byId.get(id) as RunRow | undefined;
      return row ? runFromRow(row) : null;
    },
    access(id: string): RunAccess | null {
      const row = accessOf.get(id) as RunAccessRow | undefined;
      return row ? runAccessFromRow(row) : null;
    },
    /** The session's active run (unfinished, not queued), if any. */
    active(sessionId: string): ActiveRun | null {
      const row = active.get(sessionId) as { id: string; idempotency_key: string | null } | undefined;
      return row ? { id: row.id, idempotencyKey: row.idempotency_key } : null;
    },
    /** How many unfinished runs (queued ones too) the sessions of `owner` have. */
    unfinishedOf(owner: string): number {
      return unfinishedOf.get(owner) as number;
    },
    /** Every active run (unfinished, not queued), oldest first. */
    live(): RunRecord[] {
      return (live.all() as RunRow[]).map(runFromRow);
    },
    /** Newest first, at most `limit` runs and only as many as their stored sizes fit in `bytes` (at least one; see rowsToRead). */
    list({
      sessionId,
      limit,
      cursor,
      bytes = PAGE_BYTES,
    }: {
      sessionId: string;
      limit: number;
      cursor: string | null;
      bytes?: number;
    }): ListPage<RunRecord> {
      const query = (count: number) => ({ session: sessionId, cursor, limit: count });
      return readSizedPage({
        limit,
        bytes,
        sizes: (count) => (cursor === null ? firstSizes : sizesAfter).all(query(count)) as number[],
        rows: (count) => (cursor === null ? firstPage : pageAfter).all(query(count)) as RunRow[],
        map: runFromRow,
        cursorOf: (r) => r.id,
      });
    },
    setStatus(id: string, status: Exclude<RunStatus, "finished">, by: string | null = null): void {
      setStatus.run({ status, id, by });
    },
    requestCancel(id: string, at: string, by: string | null): void {
      requestCancel.run({ at, by, id });
    },
    /** Those of `ids` unfinished with a cancel requested. */
    cancelRequested(ids: readonly string[]): string[] {
      return (cancelRequested.all(JSON.stringify(ids)) as { id: string }[]).map((r) => r.id);
    },
    saveStats(id: string, stats: RunStats): void {
      saveStats.run(JSON.stringify(stats), id);
    },
    /** Raises the stored `stats.durationMs` of an unfinished run to `ms`; never lowers it. */
    saveDuration: (id: string, ms: number): void => void saveDuration.run({ id, ms }),
    /**
     * Marks the run finished (see RunChange "finish"): `cancel_requested` for an end but `aborted`
     * of a run in status `from` (if given) whose cancel was requested; else, when it changed
     * nothing, `not_live` (finished already, gone, or not in status `from`).
     */
    finish(id: string, end: Omit<FinishChange, "kind">): "finished" | "not_live" | "cancel_requested" {
      const which = { id, stop_reason: end.stopReason, from: end.from ?? null };
      const { stopDetail: stop_detail, finishedAt: finished_at } = end;
      const ended = { stop_detail, error: toJson(end.error), stats: JSON.stringify(end.stats), finished_at };
      if (finish.run({ ...which, ...ended }).changes > 0) return "finished";
      return cancelledLive.get(which) === undefined ? "not_live" : "cancel_requested";
    },
  };
}

export type RunStore = ReturnType<typeof runStore>;
