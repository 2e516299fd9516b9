-- Ownership of live runs by lease (see migrations/postgres/0008_run_leases.sql). One process
-- holds a SQLite file, so it owns every live run; the columns keep both dialects alike and
-- the fencing of writes the same.
ALTER TABLE runs ADD COLUMN owner_instance TEXT;
ALTER TABLE runs ADD COLUMN lease_expires_at REAL;
ALTER TABLE runs ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_lease_expiry ON runs (lease_expires_at) WHERE status <> 'finished';
CREATE INDEX runs_owner_instance ON runs (owner_instance) WHERE status <> 'finished';
