-- run_events becomes a rowid table with a unique index on (run_id, seq): its rows are stored
-- in the order they are written, not clustered by run. A group commit holds one new event of
-- each of many live runs; clustered by run, each of those rows dirtied its own leaf page (and
-- the splits of those leaves three more), all written to the WAL at COMMIT: about 1.8 pages
-- per event. Appended, a group's rows share one or two table pages, and only the small index
-- entries are spread over one index page per run (about 1.1 pages per event). Reads by run go
-- through the index, as before. Upgrading copies every event once, in this one transaction.
CREATE TABLE run_events_new (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL      -- the whole event as JSON
) STRICT;
INSERT INTO run_events_new (run_id, seq, type, data) SELECT run_id, seq, type, data FROM run_events ORDER BY run_id, seq;
DROP TABLE run_events;
ALTER TABLE run_events_new RENAME TO run_events;
CREATE UNIQUE INDEX run_events_run_seq ON run_events (run_id, seq);
