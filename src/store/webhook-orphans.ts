/*
 * A webhook delivery outlives its run (migration 0022: run_id ON DELETE SET NULL): when a
 * session's delete takes its runs, their pending deliveries stay in the outbox, still sent and
 * retried as any other (they carry their payload and owner). A delivery whose run is gone is
 * kept only to be sent: once settled (delivered, failed, given up), or settled when its run
 * goes, it is dropped, in the transaction that settled it or deleted the run.
 */

/** Drops the settled deliveries whose run is gone, from webhook_deliveries_orphaned (which holds only them). */
export const DROP_SETTLED_ORPHANS = "DELETE FROM webhook_deliveries WHERE run_id IS NULL AND status <> 'pending'";

/** The same over SQLite, held to that index: the planner may take the NULL range of (run_id, event_seq), pending ones and all. */
export const SQLITE_DROP_SETTLED_ORPHANS =
  "DELETE FROM webhook_deliveries INDEXED BY webhook_deliveries_orphaned WHERE run_id IS NULL AND status <> 'pending'";
