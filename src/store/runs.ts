import { z } from "zod";
import type { RunError } from "../agent/run-error.js";
import type { RunStats } from "../agent/stats.js";
import type { StopReason } from "../agent/stop-reason.js";
import { type ApprovalPolicy, ApprovalPolicySchema } from "../domain/approval-policy.js";
import type { RunStatus, RunView } from "../domain/run.js";
import type { Db } from "./database.js";
import { parseJsonColumn, parseOptionalJsonColumn, toJson } from "./json.js";
import { type ListPage, toPage } from "./page.js";

export interface RunRecord extends RunView {
  approval: ApprovalPolicy | null;
  idempotencyKey: string | null;
}

interface RunRow {
  id: string;
  session_id: string;
  status: RunStatus;
  stop_reason: StopReason | null;
  error: string | null;
  input: string;
  max_turns: number;
  context_max_chars: number | null;
  approval: string | null;
  idempotency_key: string | null;
  stats: string;
  created_at: string;
  finished_at: string | null;
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

function fromRow(row: RunRow): RunRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    status: row.status,
    stopReason: row.stop_reason,
    error: parseOptionalJsonColumn(RunErrorSchema, row.error, `run ${row.id} error`),
    input: row.input,
    maxTurns: row.max_turns,
    contextMaxChars: row.context_max_chars,
    stats: parseJsonColumn(RunStatsSchema, row.stats, `run ${row.id} stats`),
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    approval: parseOptionalJsonColumn(ApprovalPolicySchema, row.approval, `run ${row.id} approval`),
    idempotencyKey: row.idempotency_key,
  };
}

/** The public view of a run record (drops the fields clients did not send back). */
export function runView(record: RunRecord): RunView {
  const { approval: _approval, idempotencyKey: _key, ...view } = record;
  return view;
}

export function runStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO runs (id, session_id, status, stop_reason, error, input, max_turns, context_max_chars, approval,
       idempotency_key, stats, created_at, finished_at)
     VALUES (@id, @session_id, @status, NULL, NULL, @input, @max_turns, @context_max_chars, @approval,
       @idempotency_key, @stats, @created_at, NULL)`,
  );
  const byId = db.prepare("SELECT * FROM runs WHERE id = ?");
  const byKey = db.prepare("SELECT * FROM runs WHERE session_id = ? AND idempotency_key = ?");
  const active = db.prepare("SELECT * FROM runs WHERE session_id = ? AND status <> 'finished' ORDER BY id LIMIT 1");
  const live = db.prepare("SELECT * FROM runs WHERE status <> 'finished' ORDER BY id");
  const page = db.prepare(
    "SELECT * FROM runs WHERE session_id = @session AND (@cursor IS NULL OR id < @cursor) ORDER BY id DESC LIMIT @limit",
  );
  const setStatus = db.prepare("UPDATE runs SET status = ? WHERE id = ? AND status <> 'finished'");
  const saveStats = db.prepare("UPDATE runs SET stats = ? WHERE id = ? AND status <> 'finished'");
  const finish = db.prepare(
    `UPDATE runs SET status = 'finished', stop_reason = @stop_reason, error = @error, stats = @stats,
       finished_at = @finished_at WHERE id = @id AND status <> 'finished'`,
  );

  return {
    insert(run: RunRecord): void {
      insert.run({
        id: run.id,
        session_id: run.sessionId,
        status: run.status,
        input: run.input,
        max_turns: run.maxTurns,
        context_max_chars: run.contextMaxChars,
        approval: toJson(run.approval),
        idempotency_key: run.idempotencyKey,
        stats: JSON.stringify(run.stats),
        created_at: run.createdAt,
      });
    },
    get(id: string): RunRecord | null {
      const row = byId.get(id) as RunRow | undefined;
      return row ? fromRow(row) : null;
    },
    byIdempotencyKey(sessionId: string, key: string): RunRecord | null {
      const row = byKey.get(sessionId, key) as RunRow | undefined;
      return row ? fromRow(row) : null;
    },
    /** The session's unfinished run, if any. */
    active(sessionId: string): RunRecord | null {
      const row = active.get(sessionId) as RunRow | undefined;
      return row ? fromRow(row) : null;
    },
    /** Every unfinished run: at start these are the runs the previous process left. */
    live(): RunRecord[] {
      return (live.all() as RunRow[]).map(fromRow);
    },
    list({
      sessionId,
      limit,
      cursor,
    }: {
      sessionId: string;
      limit: number;
      cursor: string | null;
    }): ListPage<RunRecord> {
      const rows = page.all({ session: sessionId, cursor, limit: limit + 1 }) as RunRow[];
      return toPage(rows, { limit, map: fromRow, cursorOf: (r) => r.id });
    },
    setStatus(id: string, status: Exclude<RunStatus, "finished">): void {
      setStatus.run(status, id);
    },
    saveStats(id: string, stats: RunStats): void {
      saveStats.run(JSON.stringify(stats), id);
    },
    /** Marks the run finished; false when it already was (or is gone). */
    finish(
      id: string,
      end: { stopReason: StopReason; error: RunError | null; stats: RunStats; finishedAt: string },
    ): boolean {
      return (
        finish.run({
          id,
          stop_reason: end.stopReason,
          error: toJson(end.error),
          stats: JSON.stringify(end.stats),
          finished_at: end.finishedAt,
        }).changes > 0
      );
    },
  };
}

export type RunStore = ReturnType<typeof runStore>;
