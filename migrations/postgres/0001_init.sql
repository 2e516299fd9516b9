-- The same tables and columns as migrations/sqlite/0001_init.sql (a test compares them).
-- Timestamps stay ISO-8601 TEXT, as the store writes and reads them; JSON stays TEXT, as it
-- was sent (events are replayed byte for byte).
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  owner TEXT,
  system TEXT,
  model TEXT,
  tools TEXT,
  approval TEXT,
  workspace TEXT NOT NULL,
  workspace_shared INTEGER NOT NULL DEFAULT 0,
  metadata TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX sessions_owner ON sessions (owner, id);

CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('running', 'awaiting_approval', 'cancelling', 'finished')),
  stop_reason TEXT CHECK (stop_reason IN ('complete', 'max_turns', 'aborted', 'error')),
  error TEXT,
  input TEXT NOT NULL,
  max_turns INTEGER NOT NULL,
  context_max_chars INTEGER,
  approval TEXT,
  idempotency_key TEXT,
  stats TEXT NOT NULL,
  created_at TEXT NOT NULL,
  finished_at TEXT
);
CREATE INDEX runs_session ON runs (session_id, id);
CREATE INDEX runs_live ON runs (status) WHERE status <> 'finished';
CREATE UNIQUE INDEX runs_idempotency ON runs (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE messages (
  id TEXT NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
  content TEXT NOT NULL,
  tool_calls TEXT,
  tool_call_id TEXT,
  is_error INTEGER,
  metadata TEXT,
  created_at TEXT NOT NULL,
  UNIQUE (session_id, seq)
);
CREATE INDEX messages_run ON messages (run_id);

CREATE TABLE run_events (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE tool_calls (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  ordinal INTEGER NOT NULL,
  name TEXT NOT NULL,
  input TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('proposed', 'awaiting_approval', 'approved', 'denied', 'started', 'finished')),
  decision TEXT CHECK (decision IN ('approve', 'deny')),
  decision_reason TEXT,
  approval_reason TEXT,
  proposed_at TEXT NOT NULL,
  decided_at TEXT,
  started_at TEXT,
  finished_at TEXT,
  result_message_id TEXT,
  PRIMARY KEY (run_id, id)
);

CREATE TABLE run_steps (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  turn INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, turn)
);

CREATE TABLE server_heartbeat (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  at TEXT NOT NULL
);

CREATE TABLE server_probe (
  data BYTEA NOT NULL
);
