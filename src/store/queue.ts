import { z } from "zod";
import { ApprovalPolicySchema } from "../domain/approval-policy.js";
import type { RunStatus } from "../domain/run.js";
import type { RunEvent } from "../domain/run-events.js";
import { StoredResolvedTargetSchema } from "../domain/webhook.js";
import type { Db } from "./database.js";
import { inputsFull, type OwnerLimit } from "./errors.js";
import { parseJsonColumn, toJson } from "./json.js";
import { NOW_MS } from "./leases.js";
import { type RunRecord, type RunRow, runFromRow } from "./runs.js";

/**
 * The settings of the run a steered input becomes when the run it was steered into ends without
 * it: the steer's own, as its request resolved them (its webhook target resolved as a start's).
 */
export type InputRunSettings = Pick<
  RunRecord,
  | "maxTurns"
  | "contextMaxChars"
  | "maxTokens"
  | "maxDurationMs"
  | "maxToolCalls"
  | "loopRepeatLimit"
  | "planning"
  | "approval"
  | "webhook"
>;

const InputRunSettingsSchema = z.object({
  maxTurns: z.number(),
  contextMaxChars: z.number().nullable(),
  maxTokens: z.number().nullable(),
  maxDurationMs: z.number().nullable(),
  maxToolCalls: z.number().nullable(),
  loopRepeatLimit: z.number(),
  planning: z.boolean(),
  approval: ApprovalPolicySchema.nullable(),
  webhook: StoredResolvedTargetSchema.nullable(),
});

/** Input steered into an active run, stored until the run takes it as a user message. */
export interface RunInput {
  /** The id of the user message it becomes. */
  id: string;
  runId: string;
  content: string;
  createdAt: string;
  /** Its steer's settings (see InputRunSettings); absent for input stored without them (before migration 0023). */
  settings?: InputRunSettings;
}

interface RunInputRow {
  id: string;
  run_id: string;
  content: string;
  created_at: string;
  run_settings: string | null;
}

export const runInputFromRow = (row: RunInputRow): RunInput => ({
  id: row.id,
  runId: row.run_id,
  content: row.content,
  createdAt: row.created_at,
  ...(row.run_settings === null
    ? {}
    : { settings: parseJsonColumn(InputRunSettingsSchema, row.run_settings, `input ${row.id} run settings`) }),
});

/** The stored form of an input's settings (see RunInput.settings). */
export const runSettingsColumn = (input: RunInput): string | null => toJson(input.settings);

/** A queued run's `run.started`, as the event its start writes. */
export const startedEvent = (runId: string, seq: number, at: string): RunEvent => ({
  type: "run.started",
  runId,
  seq,
  at,
});

/** The SQLite tables of a session's queue of runs and of steered input (see migration 0006). */
/**
 * The UPDATE that counts one more holder of a session's queue (see Store.runs.holdQueue), in
 * either dialect: `now` is its clock in ms, `max` its two-argument maximum. A hold that has
 * run out counts its holders again from one (a start whose process died never released it).
 */
export const holdQueueSql = (now: string, param: { id: string; ms: string }, max: "max" | "greatest"): string =>
  `UPDATE sessions SET
     queue_holders = CASE WHEN queue_held_until > ${now} THEN queue_holders + 1 ELSE 1 END,
     queue_held_until = ${max}(coalesce(queue_held_until, 0), ${now} + ${param.ms})
   WHERE id = ${param.id}`;

/** The UPDATE that counts one holder out (see Store.runs.releaseQueue): the last one out, or a hold run out, frees the queue. */
export const releaseQueueSql = (now: string, id: string): string =>
  `UPDATE sessions SET
     queue_holders = CASE WHEN queue_holders > 1 AND queue_held_until > ${now} THEN queue_holders - 1 ELSE 0 END,
     queue_held_until = CASE WHEN queue_holders > 1 AND queue_held_until > ${now} THEN queue_held_until END
   WHERE id = ${id}`;

/**
 * The statement telling whether a session holds a trace of a steered input (see
 * Store.inputs.steered), in either dialect's placeholders: `session`, the input's `id`, and the
 * `key` and `run` id of a run made of it.
 */
export const steeredSql = (p: { session: string; id: string; key: string; run: string }): string =>
  `SELECT EXISTS (SELECT 1 FROM run_inputs i WHERE i.id = ${p.id}
       AND (SELECT r.session_id FROM runs r WHERE r.id = i.run_id) = ${p.session})
     OR EXISTS (SELECT 1 FROM messages WHERE session_id = ${p.session} AND id = ${p.id} AND role = 'user')
     OR EXISTS (SELECT 1 FROM runs WHERE session_id = ${p.session} AND idempotency_key = ${p.key})
     OR EXISTS (SELECT 1 FROM runs WHERE id = ${p.run} AND session_id = ${p.session}) AS steered`;

export function queueStore(db: Db) {
  // Existence first: most sessions and runs have none, and SQLite answers that ~5-10x faster
  // than the ordered select of whole rows.
  const anyQueued = db.prepare("SELECT 1 FROM runs WHERE session_id = +? AND status = 'queued' LIMIT 1");
  const queuedIds = db
    .prepare("SELECT id FROM runs WHERE session_id = +? AND status = 'queued' ORDER BY created_at, id")
    .pluck();
  const anyPending = db.prepare("SELECT 1 FROM run_inputs WHERE run_id = +? LIMIT 1");
  const oldest = db.prepare(
    "SELECT * FROM runs WHERE session_id = +? AND status = 'queued' ORDER BY created_at, id LIMIT 1",
  );
  const sessions = db.prepare("SELECT DISTINCT session_id FROM runs WHERE status = 'queued' ORDER BY session_id");
  const inputRuns = db.prepare("SELECT DISTINCT run_id FROM run_inputs").pluck();
  const start = db.prepare("UPDATE runs SET status = 'running' WHERE id = ? AND status = 'queued'");
  const ownerOf = db.prepare("SELECT owner FROM sessions WHERE id = ?").pluck();
  const activeOfOwner = db
    .prepare(
      `SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id
       WHERE s.owner = +? AND r.status NOT IN ('finished', 'queued')`,
    )
    .pluck();
  const hold = db.prepare(holdQueueSql(NOW_MS, { id: "+@id", ms: "@ms" }, "max"));
  const release = db.prepare(releaseQueueSql(NOW_MS, "?"));
  const held = db.prepare(`SELECT 1 FROM sessions WHERE id = ? AND queue_held_until > ${NOW_MS}`);
  const releaseAll = db.prepare(
    "UPDATE sessions SET queue_held_until = NULL, queue_holders = 0 WHERE queue_held_until IS NOT NULL",
  );
  const addInput = db.prepare(
    `INSERT INTO run_inputs (id, run_id, content, created_at, run_settings)
     SELECT @id, @run_id, @content, @created_at, @run_settings
     WHERE EXISTS (SELECT 1 FROM runs WHERE id = @run_id AND status IN ('running', 'awaiting_approval'))
       AND NOT EXISTS (SELECT 1 FROM messages WHERE id = @id AND role = 'user'
         AND session_id = (SELECT session_id FROM runs WHERE id = @run_id))
     ON CONFLICT (id) DO NOTHING`,
  );
  const pending = db.prepare("SELECT * FROM run_inputs WHERE run_id = +? ORDER BY created_at, id");
  const others = db.prepare("SELECT count(*) FROM run_inputs WHERE run_id = ? AND id <> ?").pluck();
  const statusWhilePending = db
    .prepare(
      "SELECT (SELECT status FROM runs WHERE runs.id = run_inputs.run_id) FROM run_inputs WHERE id = ? AND run_id = ?",
    )
    .pluck();
  const holds = db.prepare("SELECT content = ? FROM run_inputs WHERE id = ? AND run_id = ?").pluck();
  const leftHolds = db.prepare(
    `SELECT run_id, content = ? AS same FROM run_inputs i WHERE id = ?
       AND (SELECT r.status FROM runs r WHERE r.id = i.run_id) = 'finished'`,
  );
  const left = db.prepare(
    "SELECT i.* FROM run_inputs i WHERE id = ? AND (SELECT r.status FROM runs r WHERE r.id = i.run_id) = 'finished'",
  );
  const steered = db.prepare(steeredSql({ session: "@session", id: "@id", key: "@key", run: "@run" })).pluck();
  const take = db.prepare("DELETE FROM run_inputs WHERE id = ? AND run_id = ?");
  const withdraw = db.prepare("DELETE FROM run_inputs WHERE id = ?");
  // Driven from the (few) pending inputs, each looking its run up by id: a join let the
  // planner scan every run ever stored (0.7 ms per 10,000 runs, at each start).
  const orphaned = db.prepare(
    `SELECT i.* FROM run_inputs i WHERE (SELECT r.status FROM runs r WHERE r.id = i.run_id) = 'finished'
     ORDER BY i.created_at, i.id`,
  );
  const leftOn = db
    .prepare(
      `SELECT i.id FROM run_inputs i WHERE run_id = +? AND (SELECT r.status FROM runs r WHERE r.id = i.run_id) = 'finished'
       ORDER BY i.created_at, i.id`,
    )
    .pluck();

  return {
    anyQueued(sessionId: string): boolean {
      return anyQueued.get(sessionId) !== undefined;
    },
    queuedIds(sessionId: string): string[] {
      return queuedIds.all(sessionId) as string[];
    },
    oldest(sessionId: string): RunRecord | null {
      const row = oldest.get(sessionId) as RunRow | undefined;
      return row ? runFromRow(row) : null;
    },
    sessions(): string[] {
      return (sessions.all() as { session_id: string }[]).map((r) => r.session_id);
    },
    /** The runs with steered input pending. */
    runsWithInput(): string[] {
      return inputRuns.all() as string[];
    },
    /** See Store.runs.holdQueue. */
    hold(sessionId: string, ms: number): void {
      hold.run({ id: sessionId, ms });
    },
    /** See Store.runs.releaseQueue. */
    release(sessionId: string): void {
      release.run(sessionId);
    },
    /** Releases every session's hold (at open: a hold belongs to a start of a process that is gone). */
    releaseAll(): void {
      releaseAll.run();
    },
    /** Whether the session's queue is held now. */
    held(sessionId: string): boolean {
      return held.get(sessionId) !== undefined;
    },
    /**
     * The limit the session's owner is at: its owner's active runs (unfinished, not queued) are
     * `max` or more. Null when under it, or when the session has no owner.
     */
    ownerFull(sessionId: string, max: number): OwnerLimit | null {
      const owner = ownerOf.get(sessionId) as string | null | undefined;
      if (owner == null) return null;
      return (activeOfOwner.get(owner) as number) >= max ? { owner, max } : null;
    },
    /** Marks a queued run running; false when it is not queued (any more). */
    start(runId: string): boolean {
      return start.run(runId).changes > 0;
    },
    /**
     * False when the run does not take input (not running nor awaiting approval). With `max`,
     * throws `inputs_full` when the run has `max` pending inputs besides this one.
     */
    addInput(input: RunInput, max?: number): boolean {
      if (max !== undefined && (others.get(input.runId, input.id) as number) >= max) throw inputsFull(max);
      return (
        addInput.run({
          id: input.id,
          run_id: input.runId,
          content: input.content,
          created_at: input.createdAt,
          run_settings: runSettingsColumn(input),
        }).changes > 0
      );
    },
    pending(runId: string): RunInput[] {
      if (anyPending.get(runId) === undefined) return [];
      return (pending.all(runId) as RunInputRow[]).map(runInputFromRow);
    },
    pendingStatus(runId: string, id: string): RunStatus | null {
      return (statusWhilePending.get(id, runId) as RunStatus | undefined) ?? null;
    },
    pendingHolds(runId: string, id: string, content: string): boolean | null {
      const same = holds.get(content, id, runId) as number | undefined;
      return same === undefined ? null : same === 1;
    },
    leftHolds(id: string, content: string): { runId: string; same: boolean } | null {
      const row = leftHolds.get(content, id) as { run_id: string; same: number } | undefined;
      return row ? { runId: row.run_id, same: row.same === 1 } : null;
    },
    left(id: string): RunInput | null {
      const row = left.get(id) as RunInputRow | undefined;
      return row ? runInputFromRow(row) : null;
    },
    steered(sessionId: string, id: string, madeRun: { key: string; id: string }): boolean {
      return steered.get({ session: sessionId, id, key: madeRun.key, run: madeRun.id }) === 1;
    },
    /** Removes a pending input the run takes; false when it was not pending. */
    take(runId: string, inputId: string): boolean {
      return take.run(inputId, runId).changes > 0;
    },
    /** Removes a pending input (a new run is made from it); false when it was not pending. */
    withdraw(id: string): boolean {
      return withdraw.run(id).changes > 0;
    },
    orphaned(): RunInput[] {
      return (orphaned.all() as RunInputRow[]).map(runInputFromRow);
    },
    leftOn(runId: string): string[] {
      return leftOn.all(runId) as string[];
    },
  };
}

export type QueueStore = ReturnType<typeof queueStore>;
