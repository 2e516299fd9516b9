-- Deleting a run (a session's delete cascades to its runs) makes SQLite look for the run's
-- messages by run_id, the child key of their foreign key: without an index on it that is a
-- scan of every session's messages for each run deleted, on the event loop (2.4 s for a
-- session of 20 runs among 400,000 messages). The index costs one small entry per message
-- written; the per-token events are not messages.
CREATE INDEX messages_run ON messages (run_id);
