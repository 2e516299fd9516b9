-- A delivery outlives its run: a session's delete (which takes its runs) leaves the run's
-- pending deliveries in the outbox with run_id NULL, to be sent and retried as any other (they
-- carry their payload and owner); the store drops such a delivery once it is settled, and the
-- settled ones of the runs a session's delete takes with that delete.
-- Locks runs before webhook_deliveries, the order every run write takes them in (a run's row,
-- then its events' deliveries), so a write of an instance still running the release before this
-- one finishes first instead of deadlocking with this migration. ACCESS EXCLUSIVE: what dropping
-- the foreign key takes on its referenced table anyway, so no lock is upgraded later.
LOCK TABLE runs IN ACCESS EXCLUSIVE MODE;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_run_id_fkey;
ALTER TABLE webhook_deliveries ALTER COLUMN run_id DROP NOT NULL;
-- NOT VALID: every row met the same reference under the constraint just dropped, so the table
-- is not scanned again under the lock (new rows are checked as ever).
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_run_id_fkey
  FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE SET NULL NOT VALID;
-- The index of the settled deliveries whose run is gone is built by 0024, concurrently, not
-- under this lock.
