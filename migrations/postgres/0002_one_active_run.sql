-- One unfinished run per session, kept by the database (as migrations/sqlite/0002).
CREATE UNIQUE INDEX runs_one_active ON runs (session_id) WHERE status <> 'finished';

-- When approval was asked: its timeout counts from here, also across a restart.
ALTER TABLE tool_calls ADD COLUMN approval_requested_at TEXT;
