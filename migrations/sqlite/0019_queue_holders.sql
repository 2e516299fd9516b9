-- How many interrupting starts hold a session's queue (see migrations/postgres/0019_queue_holders.sql).
ALTER TABLE sessions ADD COLUMN queue_holders INTEGER NOT NULL DEFAULT 0;
