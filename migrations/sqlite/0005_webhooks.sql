-- Webhooks: a session may name a target ({url, events}); a run keeps the target it resolved
-- at its start (its own, else its session's, else the server's WEBHOOK_URL), NULL for none.
ALTER TABLE sessions ADD COLUMN webhook TEXT;
ALTER TABLE runs ADD COLUMN webhook TEXT;

-- The outbox: one row per delivery, written in the transaction of the event it comes from,
-- so a crash loses none. The worker claims a due row by moving next_attempt_at forward (a
-- lease), then records the attempt's outcome.
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,     -- the webhook-id header: the same across retries
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  event_seq INTEGER NOT NULL,
  type TEXT NOT NULL,      -- run.finished, approval.requested, ...
  url TEXT NOT NULL,
  body TEXT NOT NULL,      -- the JSON payload, exactly as signed and sent
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts TEXT NOT NULL,  -- JSON [{at, statusCode, error}]
  next_attempt_at INTEGER, -- ms since the epoch; NULL once delivered or failed
  created_at TEXT NOT NULL,
  finished_at TEXT,
  UNIQUE (run_id, event_seq)
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
