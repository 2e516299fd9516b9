-- Nothing to do in SQLite: its batches run in this process, which checks each statement's
-- changed rows itself (see migrations/postgres/0009_batch_checks.sql).
SELECT 1;
