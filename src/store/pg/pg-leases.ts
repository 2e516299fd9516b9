import { StoreConflictError } from "../errors.js";
import { CANCELLED_STATUS, CLAIMABLE_STATUS, type LeaseTerms, type RunLease } from "../leases.js";
import { type RunRow, runFromRow } from "../runs.js";
import type { Store } from "../store.js";
import type { Statement } from "./pg-batch.js";
import { RELEASED_CHANNEL } from "./pg-listener.js";

type Rows = <R extends Record<string, unknown>>(text: string, values?: unknown[]) => Promise<R[]>;

/** Now in ms since the epoch on the database's clock (not the transaction's start). */
export const NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::float8";

/** The statement that makes `terms.owner` the first holder (epoch 1) of a run inserted in the same batch. */
export function takeLeaseStatement(runId: string, terms: LeaseTerms): Statement {
  return {
    text: `UPDATE runs SET owner_instance = $2, epoch = 1, lease_expires_at = ${NOW_MS} + $3 WHERE id = $1`,
    values: [runId, terms.owner, terms.ttlMs],
  };
}

/** The statement that makes `terms.owner` the holder of a run it starts (a queued one), at the next epoch. */
export function takeOverStatement(runId: string, terms: LeaseTerms): Statement {
  return {
    text: `UPDATE runs SET owner_instance = $2, epoch = epoch + 1, lease_expires_at = ${NOW_MS} + $3
           WHERE id = $1 RETURNING epoch`,
    values: [runId, terms.owner, terms.ttlMs],
  };
}

/**
 * The fence of a batch, its first statement: it locks the run's row (a claim meanwhile waits,
 * or skips it) and refuses the batch unless `lease` still holds.
 */
export function fenceStatement(lease: RunLease): Statement {
  return {
    text: "UPDATE runs SET epoch = epoch WHERE id = $1 AND epoch = $2 AND owner_instance = $3",
    values: [lease.runId, lease.epoch, lease.owner],
    orRefuse: () =>
      new StoreConflictError(
        "fenced",
        `run ${lease.runId} is no longer held by ${lease.owner} at epoch ${lease.epoch}`,
      ),
  };
}

/**
 * Leases over PostgreSQL, each operation one statement. A claim takes its rows with
 * `FOR UPDATE SKIP LOCKED`: two instances reaping at once never take the same run. A renewal
 * and a release lock their rows in run id order, the order of a group commit's fences, so
 * neither deadlocks with a group committing meanwhile.
 */
export function pgLeases(rows: Rows, write: (statements: Statement[]) => Promise<unknown>): Store["leases"] {
  return {
    renew: async ({ owner, ttlMs, runIds }) =>
      (
        await rows<{ id: string; epoch: number }>(
          `UPDATE runs SET lease_expires_at = ${NOW_MS} + $2
           WHERE id IN (SELECT id FROM runs WHERE owner_instance = $1 AND id = ANY($3::text[])
             ORDER BY id FOR UPDATE)
           RETURNING id, epoch`,
          [owner, ttlMs, runIds],
        )
      ).map((row) => ({ runId: row.id, owner, epoch: row.epoch })),
    claim: async ({ owner, ttlMs, limit, scope, except, cancelled }) =>
      (
        await rows<RunRow & { epoch: number } & Record<string, unknown>>(
          `UPDATE runs SET owner_instance = $1, epoch = epoch + 1, lease_expires_at = ${NOW_MS} + $2
           WHERE id IN (
             SELECT id FROM runs WHERE ${CLAIMABLE_STATUS} AND ($4 OR owner_instance IS NULL
               OR lease_expires_at IS NULL OR lease_expires_at < ${NOW_MS} OR ($5 AND owner_instance = $1))
               AND NOT (id = ANY($6::text[])) AND ($7::boolean IS NULL OR (${CANCELLED_STATUS}) = $7::boolean)
             ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
           RETURNING *`,
          [owner, ttlMs, limit, scope === "all", scope === "expired+own", except ?? [], cancelled ?? null],
        )
      )
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((row) => ({ record: runFromRow(row), lease: { runId: row.id, owner, epoch: row.epoch } })),
    release: async (owner) => {
      const [released] = (await write([
        {
          text: `UPDATE runs SET owner_instance = NULL, lease_expires_at = NULL
                 WHERE id IN (SELECT id FROM runs WHERE owner_instance = $1 AND status <> 'finished'
                   ORDER BY id FOR UPDATE)`,
          values: [owner],
        },
        // Delivered on commit: the runs are claimable by then.
        { text: "SELECT pg_notify($1, $2)", values: [RELEASED_CHANNEL, owner] },
      ])) as { rowCount: number | null }[];
      return released?.rowCount ?? 0;
    },
  };
}
