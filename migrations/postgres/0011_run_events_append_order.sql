-- Nothing to do in PostgreSQL: its tables are heaps, stored in the order rows are written, and
-- run_events is read by run through its primary key's index already (see
-- migrations/sqlite/0011_run_events_append_order.sql).
SELECT 1;
