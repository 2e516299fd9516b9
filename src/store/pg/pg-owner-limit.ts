import { type OwnerLimit, ownerRunsFull, ownerSessionsFull } from "../errors.js";
import type { Statement } from "./pg-batch.js";

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
    { text: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", values: [`agent-owner-${what}:${limit.owner}`] },
    {
      text: `SELECT 1 WHERE (${count}) < $2`,
      values: [limit.owner, limit.max],
      orRefuse: () => (what === "sessions" ? ownerSessionsFull(limit) : ownerRunsFull(limit)),
    },
  ];
}
