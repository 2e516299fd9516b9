-- How many interrupting starts hold a session's queue (see 0010_queue_holds.sql), on every
-- instance together: each start counts itself in when it holds the queue and out when its run
-- is inserted; the hold is released when the last is out, or when queue_held_until passes
-- (a start whose process died never counts itself out). A start's release no longer frees the
-- queue under another start, of this instance or another, still on its way.
ALTER TABLE sessions ADD COLUMN queue_holders INTEGER NOT NULL DEFAULT 0;
