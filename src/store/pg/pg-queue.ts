import type { RunStatus } from "../../domain/run.js";
import { inputsFull, isConflict, queueHeld, StoreConflictError } from "../errors.js";
import {
  holdQueueSql,
  type RunInput,
  releaseQueueSql,
  runInputFromRow,
  runSettingsColumn,
  startedEvent,
  steeredSql,
} from "../queue.js";
import { type RunRow, runFromRow } from "../runs.js";
import type { Store } from "../store.js";
import type { Statement } from "./pg-batch.js";
import { eventRows } from "./pg-changes.js";
import { NOW_MS, takeOverStatement } from "./pg-leases.js";
import { ownerStartStatements } from "./pg-owner-limit.js";
import { deliveryStatements } from "./pg-webhooks.js";

type Rows = <R extends Record<string, unknown>>(text: string, values?: unknown[]) => Promise<R[]>;
type Write = (statements: Statement[]) => Promise<{ rowCount: number | null; rows: unknown[] }[]>;

/** A queued run another instance starts or cancels meanwhile is passed over for the next; at most this often. */
const START_ATTEMPTS = 8;

/**
 * Refuses the batch (`active_run`, see queueHeld) while the session's queue is held. A session
 * that is gone holds nothing: the batch goes on, and its run's insert is refused `session_gone`.
 */
export const queueFreeStatement = (sessionId: string): Statement => ({
  text: `SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND queue_held_until > ${NOW_MS})`,
  values: [sessionId],
  orRefuse: () => queueHeld(sessionId),
});

/** A session's queue of runs over PostgreSQL: each start is one batch, its status change conditional. */
export function pgQueue(
  rows: Rows,
  write: Write,
): Pick<Store["runs"], "anyQueued" | "queuedIds" | "queuedSessions" | "startQueued" | "holdQueue" | "releaseQueue"> {
  return {
    anyQueued: async (sessionId) =>
      (
        await rows<{ any: boolean }>(
          "SELECT EXISTS (SELECT 1 FROM runs WHERE session_id = $1 AND status = 'queued') AS any",
          [sessionId],
        )
      )[0]?.any === true,
    queuedIds: async (sessionId) =>
      (
        await rows<{ id: string }>(
          "SELECT id FROM runs WHERE session_id = $1 AND status = 'queued' ORDER BY created_at, id",
          [sessionId],
        )
      ).map((r) => r.id),
    queuedSessions: async () =>
      (
        await rows<{ session_id: string }>(
          "SELECT DISTINCT session_id FROM runs WHERE status = 'queued' ORDER BY session_id",
        )
      ).map((r) => r.session_id),
    holdQueue: async (sessionId, forMs) => {
      await rows(holdQueueSql(NOW_MS, { id: "$1", ms: "$2::float8" }, "greatest"), [sessionId, forMs]);
    },
    releaseQueue: async (sessionId) => {
      await rows(releaseQueueSql(NOW_MS, "$1"), [sessionId]);
    },
    startQueued: async (sessionId, at, terms, { maxPerOwner } = {}) => {
      for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
        const [row] = await rows<RunRow & { session_owner: string | null } & Record<string, unknown>>(
          `SELECT r.*, s.owner AS session_owner FROM runs r JOIN sessions s ON s.id = r.session_id
           WHERE r.session_id = $1 AND r.status = 'queued' ORDER BY r.created_at, r.id LIMIT 1`,
          [sessionId],
        );
        if (!row) return null;
        const run = runFromRow(row);
        // A session's owner never changes: read with its run, counted under the owner's lock.
        const owner = row.session_owner;
        const limit = maxPerOwner && owner !== null ? { owner, max: maxPerOwner } : null;
        const [last] = await rows<{ seq: number | null }>("SELECT max(seq) AS seq FROM run_events WHERE run_id = $1", [
          run.id,
        ]);
        const events = [startedEvent(run.id, (last?.seq ?? 0) + 1, at)];
        const { stored, statement } = eventRows(events);
        try {
          // The owner's count first (before this run is counted running), under its lock.
          const limited = limit ? ownerStartStatements(limit) : [];
          const results = await write([
            ...limited,
            // A held queue waits like a busy one (see holdQueue).
            queueFreeStatement(sessionId),
            {
              text: "UPDATE runs SET status = 'running' WHERE id = $1 AND status = 'queued'",
              values: [run.id],
              orRefuse: () => new StoreConflictError("run_not_live", `run ${run.id} is no longer queued`),
            },
            takeOverStatement(run.id, terms),
            ...(statement ? [statement] : []),
            ...deliveryStatements(events, run.webhook ? { sessionId, ...run.webhook } : null),
          ]);
          const taken = results[limited.length + 2];
          const { epoch } = (taken as { rows: { epoch: number }[] }).rows[0] as { epoch: number };
          return {
            run: { ...run, status: "running" as const },
            events: stored,
            lease: { runId: run.id, owner: terms.owner, epoch },
          };
        } catch (err) {
          // The session has an active run: the queue waits for its end.
          if (isConflict(err, "active_run")) return null;
          if (!isConflict(err, "run_not_live")) throw err;
        }
      }
      return null;
    },
  };
}

/** Removes a steered input a new run is made from; the batch is refused (`input_taken`) when it is gone. */
export const takeInputStatement = (id: string): Statement => ({
  text: "DELETE FROM run_inputs WHERE id = $1",
  values: [id],
  orRefuse: () => new StoreConflictError("input_taken", `input ${id} is no longer pending`),
});

interface RunInputRow extends Record<string, unknown> {
  id: string;
  run_id: string;
  content: string;
  created_at: string;
  run_settings: string | null;
}

/** Steered input over PostgreSQL. */
export function pgInputs(rows: Rows, write: Write): Store["inputs"] {
  return {
    add: async (input: RunInput, { max }: { max?: number } = {}) => {
      const results = await write([
        // The run's row first: a commit of the run (taking this input, say) holds it, and its
        // fence locks it, so the insert's snapshot is taken after that commit, and sees its
        // message. Without it, a retry of a keyed steer racing the take could see neither the
        // message nor the input, and add it again.
        { text: "SELECT 1 FROM runs WHERE id = $1 FOR SHARE", values: [input.runId] },
        ...maxInputsStatements(input, max),
        {
          text: `INSERT INTO run_inputs (id, run_id, content, created_at, run_settings)
                 SELECT $1, $2, $3, $4, $5
                 WHERE EXISTS (SELECT 1 FROM runs WHERE id = $2 AND status IN ('running', 'awaiting_approval'))
                   AND NOT EXISTS (SELECT 1 FROM messages WHERE id = $1 AND role = 'user'
                     AND session_id = (SELECT session_id FROM runs WHERE id = $2))
                 ON CONFLICT (id) DO NOTHING`,
          values: [input.id, input.runId, input.content, input.createdAt, runSettingsColumn(input)],
        },
      ]);
      return (results.at(-1)?.rowCount ?? 0) > 0;
    },
    pending: async (runId) =>
      (await rows<RunInputRow>("SELECT * FROM run_inputs WHERE run_id = $1 ORDER BY created_at, id", [runId])).map(
        runInputFromRow,
      ),
    pendingStatus: async (runId, id) =>
      (
        await rows<{ status: RunStatus }>(
          "SELECT (SELECT status FROM runs WHERE runs.id = run_inputs.run_id) AS status FROM run_inputs WHERE id = $1 AND run_id = $2",
          [id, runId],
        )
      )[0]?.status ?? null,
    pendingHolds: async (runId, id, content) =>
      (
        await rows<{ same: boolean }>("SELECT content = $3 AS same FROM run_inputs WHERE id = $1 AND run_id = $2", [
          id,
          runId,
          content,
        ])
      )[0]?.same ?? null,
    leftHolds: async (id, content) => {
      const [row] = await rows<{ run_id: string; same: boolean }>(
        `SELECT run_id, content = $2 AS same FROM run_inputs i WHERE id = $1
         AND (SELECT r.status FROM runs r WHERE r.id = i.run_id) = 'finished'`,
        [id, content],
      );
      return row ? { runId: row.run_id, same: row.same } : null;
    },
    left: async (id) => {
      const [row] = await rows<RunInputRow>(
        `SELECT i.* FROM run_inputs i WHERE id = $1
         AND (SELECT r.status FROM runs r WHERE r.id = i.run_id) = 'finished'`,
        [id],
      );
      return row ? runInputFromRow(row) : null;
    },
    steered: async (sessionId, id, madeRun) =>
      (
        await rows<{ steered: boolean }>(steeredSql({ session: "$1", id: "$2", key: "$3", run: "$4" }), [
          sessionId,
          id,
          madeRun.key,
          madeRun.id,
        ])
      )[0]?.steered === true,
    // The take's delete without its refusal: an input already gone is no conflict here.
    withdraw: async (id) => {
      const { text, values } = takeInputStatement(id);
      return ((await write([{ text, values }])).at(-1)?.rowCount ?? 0) > 0;
    },
    orphaned: async () =>
      (
        await rows<RunInputRow>(
          // Driven from the (few) pending inputs, each run looked up by id (the reaper asks every second).
          `SELECT i.* FROM run_inputs i WHERE (SELECT r.status FROM runs r WHERE r.id = i.run_id) = 'finished'
           ORDER BY i.created_at, i.id`,
        )
      ).map(runInputFromRow),
    leftOn: async (runId) =>
      (
        await rows<{ id: string }>(
          `SELECT i.id FROM run_inputs i WHERE run_id = $1
           AND (SELECT r.status FROM runs r WHERE r.id = i.run_id) = 'finished' ORDER BY i.created_at, i.id`,
          [runId],
        )
      ).map((row) => row.id),
  };
}

/**
 * With `max`, the statements that refuse an input (`inputs_full`) when its run has `max` pending
 * inputs besides it: a transaction-scoped advisory lock on the run's inputs, so one such insert
 * of a run runs at a time across every instance, then the count, taken after the lock, which
 * under READ COMMITTED sees every insert committed before it.
 */
function maxInputsStatements(input: RunInput, max: number | undefined): Statement[] {
  if (max === undefined) return [];
  return [
    { text: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", values: [`agent-run-inputs:${input.runId}`] },
    {
      text: "SELECT 1 WHERE (SELECT count(*) FROM run_inputs WHERE run_id = $1 AND id <> $2) < $3",
      values: [input.runId, input.id, max],
      orRefuse: () => inputsFull(max),
    },
  ];
}
