-- A session's queue can be held (see migrations/postgres/0010_queue_holds.sql).
ALTER TABLE sessions ADD COLUMN queue_held_until REAL;
