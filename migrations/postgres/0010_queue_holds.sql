-- A session's queue can be held (until a time in ms on the database's clock): while it is,
-- no queued run of the session starts. An interrupting start holds it from before it cancels
-- the active run until its own run is inserted, so the run that ends does not start the
-- queue in its place, whichever instance executed it.
ALTER TABLE sessions ADD COLUMN queue_held_until DOUBLE PRECISION;
