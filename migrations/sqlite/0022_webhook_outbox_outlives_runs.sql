-- foreign-keys: off
-- A delivery outlives its run: a session's delete (which takes its runs) leaves the run's
-- pending deliveries in the outbox with run_id NULL, to be sent and retried as any other (they
-- carry their payload and owner); the store drops such a delivery once it is settled, and drops
-- a run's settled ones with the run. SQLite cannot alter a foreign key: the table is rebuilt
-- (foreign keys off, checked before the commit, the old pages given back after), its rows
-- copied once in this one transaction, its indexes made again.
CREATE TABLE webhook_deliveries_new (
  id TEXT PRIMARY KEY,     -- the webhook-id header: the same across retries
  run_id TEXT REFERENCES runs (id) ON DELETE SET NULL, -- NULL once the run is deleted
  event_seq INTEGER NOT NULL,
  type TEXT NOT NULL,      -- run.finished, approval.requested, ...
  url TEXT NOT NULL,
  body TEXT NOT NULL,      -- the JSON payload, exactly as signed and sent
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts TEXT NOT NULL,  -- JSON [{at, statusCode, error}]
  next_attempt_at INTEGER, -- ms since the epoch; NULL once delivered or failed
  created_at TEXT NOT NULL,
  finished_at TEXT,
  owner TEXT NOT NULL DEFAULT '',
  reason TEXT,
  UNIQUE (run_id, event_seq)
) STRICT;
INSERT INTO webhook_deliveries_new (id, run_id, event_seq, type, url, body, status, attempts, next_attempt_at,
    created_at, finished_at, owner, reason)
  SELECT id, run_id, event_seq, type, url, body, status, attempts, next_attempt_at, created_at, finished_at, owner, reason
  FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
CREATE INDEX webhook_deliveries_due_order ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_owner_due ON webhook_deliveries (owner, next_attempt_at, id) WHERE status = 'pending';
-- The index of the settled deliveries whose run is gone is 0024's (as in PostgreSQL).
