-- See migrations/sqlite/0020_shared_workspace_sessions.sql.
CREATE INDEX sessions_shared_workspace ON sessions (workspace) WHERE workspace_shared = 1;
