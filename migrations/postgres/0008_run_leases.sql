-- Ownership of live runs by lease: the instance executing a run (owner_instance), until when
-- its lease holds (lease_expires_at, ms since the epoch on the database's clock) and the
-- fencing epoch, bumped by every claim. A write of a live run names the epoch it holds and
-- is refused once another instance has claimed the run. NULL owner: nobody holds it (a new
-- queued run, or a lease given up at shutdown), claimable at once.
ALTER TABLE runs ADD COLUMN owner_instance TEXT;
ALTER TABLE runs ADD COLUMN lease_expires_at DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
-- The reaper's query: unfinished runs by lease expiry.
CREATE INDEX runs_lease_expiry ON runs (lease_expires_at) WHERE status <> 'finished';
CREATE INDEX runs_owner_instance ON runs (owner_instance) WHERE status <> 'finished';
