-- One unfinished run per session, kept by the database: starting a run is inserting it,
-- and a second insert for a busy session fails here. (A database that somehow holds two
-- keeps the newest live; the older ones are marked finished, aborted.)
UPDATE runs SET status = 'finished', stop_reason = 'aborted', finished_at = created_at
WHERE status <> 'finished'
  AND id NOT IN (SELECT max(id) FROM runs WHERE status <> 'finished' GROUP BY session_id);
CREATE UNIQUE INDEX runs_one_active ON runs (session_id) WHERE status <> 'finished';

-- When approval was asked: its timeout counts from here, also across a restart.
ALTER TABLE tool_calls ADD COLUMN approval_requested_at TEXT;
