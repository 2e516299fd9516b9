-- foreign-keys: off
-- A busy session may queue a run (status 'queued': stored, not yet started, not active) or
-- steer its active run (run_inputs). The runs table is rebuilt because its status CHECK
-- changes (SQLite cannot alter a CHECK); this file runs with foreign keys off, so the rebuild
-- neither cascades into nor breaks the rows that reference runs.
CREATE TABLE runs_new (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'awaiting_approval', 'cancelling', 'finished')),
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
  finished_at TEXT,
  webhook TEXT            -- JSON {url, events} resolved at the run's start; NULL: none
) STRICT;
INSERT INTO runs_new (id, session_id, status, stop_reason, stop_detail, error, input, max_turns, context_max_chars,
    max_tokens, max_duration_ms, max_tool_calls, loop_repeat_limit, planning, approval, idempotency_key, stats,
    created_at, finished_at, webhook)
  SELECT id, session_id, status, stop_reason, stop_detail, error, input, max_turns, context_max_chars,
    max_tokens, max_duration_ms, max_tool_calls, loop_repeat_limit, planning, approval, idempotency_key, stats,
    created_at, finished_at, webhook FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_session ON runs (session_id, id);
CREATE INDEX runs_live ON runs (status) WHERE status <> 'finished';
CREATE UNIQUE INDEX runs_idempotency ON runs (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- One active run per session; queued runs wait and do not count.
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
) STRICT;
CREATE INDEX run_inputs_run ON run_inputs (run_id, created_at, id);
