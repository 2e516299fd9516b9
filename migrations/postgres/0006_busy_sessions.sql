-- A busy session may queue a run (status 'queued': stored, not yet started, not active) or
-- steer its active run (run_inputs); as migrations/sqlite/0006, where the runs table is
-- rebuilt; PostgreSQL alters the CHECK and the index in place.
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
  CHECK (status IN ('queued', 'running', 'awaiting_approval', 'cancelling', 'finished'));
-- One active run per session; queued runs wait and do not count.
DROP INDEX runs_one_active;
CREATE UNIQUE INDEX runs_one_active ON runs (session_id) WHERE status NOT IN ('finished', 'queued');
-- A session's queue, oldest first.
CREATE INDEX runs_queue ON runs (session_id, created_at, id) WHERE status = 'queued';

-- Input steered into an active run, waiting for the point where the run takes it: a row is
-- deleted in the commit of the user message it becomes, or when it starts a new run instead.
CREATE TABLE run_inputs (
  id TEXT PRIMARY KEY,     -- the id of the user message it becomes
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  content TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX run_inputs_run ON run_inputs (run_id, created_at, id);
