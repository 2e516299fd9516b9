import { type OwnerLimit, ownerRunsFull, ownerSessionsFull } from "../errors.js";
import type { Statement } from "./pg-batch.js";

/** A transaction-scoped advisory lock on what an owner has of `what`, held to the batch's end. */
const ownerLockStatement = (what: "sessions" | "runs", owner: string): Statement => ({
  text: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
  values: [`agent-owner-${what}:${owner}`],
});

/**
 * The statements that open a batch inserting a session or a run under an OwnerLimit: a
 * transaction-scoped advisory lock on the owner (and what is counted), so one such batch of an
 * owner runs at a time across every instance, then the count, refusing the batch at the limit.
 * Under READ COMMITTED the count, taken after the lock, sees every batch committed before it.
 */
export function ownerLimitStatements(what: "sessions" | "runs", limit: OwnerLimit | undefined): Statement[] {
  if (!limit) return [];
  const count =
    what === "sessions"
      ? "SELECT count(*) FROM sessions WHERE owner = $1"
      : `SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id
         WHERE s.owner = $1 AND r.status <> 'finished'`;
  return [
    ownerLockStatement(what, limit.owner),
    {
      text: `SELECT 1 WHERE (${count}) < $2`,
      values: [limit.owner, limit.max],
      orRefuse: () => (what === "sessions" ? ownerSessionsFull(limit) : ownerRunsFull(limit)),
    },
  ];
}

/**
 * The statements that open the batch starting a queued run of an owner under an OwnerLimit
 * (see Store.runs.startQueued): the lock of ownerLimitStatements("runs"), so such starts and
 * limited inserts of an owner run one at a time across every instance, then the count of the
 * owner's active runs (unfinished, not queued), refusing the batch (`owner_runs`) at the limit.
 */
export function ownerStartStatements(limit: OwnerLimit): Statement[] {
  return [
    ownerLockStatement("runs", limit.owner),
    {
      text: `SELECT 1 WHERE (SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id
             WHERE s.owner = $1 AND r.status NOT IN ('finished', 'queued')) < $2`,
      values: [limit.owner, limit.max],
      orRefuse: () => ownerRunsFull(limit),
    },
  ];
}
