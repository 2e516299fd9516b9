import type { RunStatus } from "../domain/run.js";

/** A run's session, status and owner (its session's): see `runs.access`. */
export interface RunAccess {
  sessionId: string;
  status: RunStatus;
  owner: string | null;
  /**
   * Who asked to cancel the run, as its first cancel request said it (see RunChange
   * `cancelRequested`); null when none did, or it did not say.
   */
  cancelledBy: string | null;
}

/** What `runs.access` reads, of `runs r` joined with its `sessions s` (both stores). */
export const RUN_ACCESS_COLUMNS = "r.session_id, r.status, s.owner, r.cancel_requested_by";

/** A row of RUN_ACCESS_COLUMNS. */
export interface RunAccessRow {
  session_id: string;
  status: RunStatus;
  owner: string | null;
  cancel_requested_by: string | null;
}

export const runAccessFromRow = (row: RunAccessRow): RunAccess => ({
  sessionId: row.session_id,
  status: row.status,
  owner: row.owner,
  cancelledBy: row.cancel_requested_by,
});
