-- Sessions: a conversation with its workspace. `owner` is the hash of the API key
-- that created it (NULL when the server runs without keys).
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  owner TEXT,
  system TEXT,
  model TEXT,
  tools TEXT,             -- JSON array of tool names, NULL = all tools
  approval TEXT,          -- JSON approval policy override, NULL = defaults
  workspace TEXT NOT NULL,
  workspace_shared INTEGER NOT NULL DEFAULT 0,
  metadata TEXT,          -- JSON object
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX sessions_owner ON sessions (owner, id);

-- Runs: one user message and everything the loop did for it.
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('running', 'awaiting_approval', 'cancelling', 'finished')),
  stop_reason TEXT CHECK (stop_reason IN ('complete', 'max_turns', 'aborted', 'error')),
  error TEXT,             -- JSON {code, message}
  input TEXT NOT NULL,
  max_turns INTEGER NOT NULL,
  context_max_chars INTEGER,
  approval TEXT,          -- JSON approval policy override for this run
  idempotency_key TEXT,
  stats TEXT NOT NULL,    -- JSON RunStats
  created_at TEXT NOT NULL,
  finished_at TEXT
) STRICT;
CREATE INDEX runs_session ON runs (session_id, id);
CREATE INDEX runs_live ON runs (status) WHERE status <> 'finished';
CREATE UNIQUE INDEX runs_idempotency ON runs (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The committed history of a session, in order. Two b-trees only (the rows and
-- (session_id, seq)): every commit writes here, so each index costs on the hot path.
CREATE TABLE messages (
  id TEXT NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
  content TEXT NOT NULL,
  tool_calls TEXT,        -- JSON [{id, name, input}]
  tool_call_id TEXT,
  is_error INTEGER,
  metadata TEXT,          -- JSON ToolResultMetadata
  created_at TEXT NOT NULL,
  UNIQUE (session_id, seq)
) STRICT;

-- Every event of a run, gapless per run.
CREATE TABLE run_events (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,     -- the whole event as JSON
  PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

-- The tool-call ledger: what happened to each proposed call.
CREATE TABLE tool_calls (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  ordinal INTEGER NOT NULL, -- the call's place in the run, in the model's order
  name TEXT NOT NULL,
  input TEXT NOT NULL,    -- the raw argument text the model sent
  state TEXT NOT NULL CHECK (state IN ('proposed', 'awaiting_approval', 'approved', 'denied', 'started', 'finished')),
  decision TEXT CHECK (decision IN ('approve', 'deny')),
  decision_reason TEXT,
  approval_reason TEXT,   -- why approval was asked
  proposed_at TEXT NOT NULL,
  decided_at TEXT,
  started_at TEXT,
  finished_at TEXT,
  result_message_id TEXT,
  PRIMARY KEY (run_id, id)
) STRICT, WITHOUT ROWID;

-- The per-step trace of a run.
CREATE TABLE run_steps (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  turn INTEGER NOT NULL,
  data TEXT NOT NULL,     -- JSON StepTrace
  PRIMARY KEY (run_id, turn)
) STRICT;

-- One row, rewritten by the readiness check to prove the database takes writes.
CREATE TABLE server_heartbeat (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  at TEXT NOT NULL
) STRICT;

-- The readiness check also inserts (and rolls back) a few pages here, proving the
-- database can still grow.
CREATE TABLE server_probe (
  data BLOB NOT NULL
) STRICT;
