-- Nothing to do in PostgreSQL: messages (run_id) has had its index since 0001 (SQLite gets it
-- in its own 0012).
SELECT 1;
