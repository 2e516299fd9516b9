-- migrate: no transaction
-- See migrations/sqlite/0020_shared_workspace_sessions.sql. Built CONCURRENTLY, outside a
-- transaction: the running instances' writes go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_shared_workspace ON sessions (workspace) WHERE workspace_shared = 1;
