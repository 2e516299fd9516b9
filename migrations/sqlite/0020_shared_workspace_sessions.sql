-- The delete of a session in a shared workspace asks whether another session still names it
-- (its directory is removed with the last one): the index answers from that workspace's
-- sessions alone, not by reading every session. Sessions of their own workspace are not in it.
CREATE INDEX sessions_shared_workspace ON sessions (workspace) WHERE workspace_shared = 1;
