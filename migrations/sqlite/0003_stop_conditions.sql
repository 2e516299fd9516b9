-- foreign-keys: off
-- New stop reasons (loop_detected, budget_exhausted) and each stop's explanation; a run's
-- budgets, loop-guard limit and planning switch; a session's planning switch. The runs table
-- is rebuilt because its stop_reason CHECK changes (SQLite cannot alter a CHECK): this file
-- runs with foreign keys off, so the rebuild neither cascades into nor breaks the rows that
-- reference runs, and the runner checks every reference before it commits.
CREATE TABLE runs_new (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('running', 'awaiting_approval', 'cancelling', 'finished')),
  stop_reason TEXT CHECK (stop_reason IN ('complete', 'max_turns', 'aborted', 'error', 'loop_detected', 'budget_exhausted')),
  stop_detail TEXT,       -- one sentence: the step, the cause, what to try (NULL for complete)
  error TEXT,             -- JSON {code, message}
  input TEXT NOT NULL,
  max_turns INTEGER NOT NULL,
  context_max_chars INTEGER,
  max_tokens INTEGER,     -- NULL: no token budget
  max_duration_ms INTEGER, -- NULL: no wall-time budget
  max_tool_calls INTEGER, -- NULL: no tool-call budget
  loop_repeat_limit INTEGER NOT NULL DEFAULT 3, -- 0: the loop guard is off
  planning INTEGER NOT NULL DEFAULT 0,
  approval TEXT,          -- JSON approval policy override for this run
  idempotency_key TEXT,
  stats TEXT NOT NULL,    -- JSON RunStats
  created_at TEXT NOT NULL,
  finished_at TEXT
) STRICT;
INSERT INTO runs_new (id, session_id, status, stop_reason, error, input, max_turns, context_max_chars, approval,
    idempotency_key, stats, created_at, finished_at)
  SELECT id, session_id, status, stop_reason, error, input, max_turns, context_max_chars, approval,
    idempotency_key, stats, created_at, finished_at FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_session ON runs (session_id, id);
CREATE INDEX runs_live ON runs (status) WHERE status <> 'finished';
CREATE UNIQUE INDEX runs_idempotency ON runs (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX runs_one_active ON runs (session_id) WHERE status <> 'finished';

ALTER TABLE sessions ADD COLUMN planning INTEGER NOT NULL DEFAULT 0;
