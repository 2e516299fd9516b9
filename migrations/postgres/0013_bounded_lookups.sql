-- migrate: no transaction
-- Run outside a transaction: each index is built (and the one it replaces dropped) CONCURRENTLY,
-- so the running instances' reads and writes of the table go on meanwhile; every statement is
-- re-runnable, for a start that failed part way runs the file again.

-- A keyed steer's retry looks for the user message its input became, by id (the input's id is
-- derived from its session and key), and every steer's input insert checks that no such
-- message exists. Without an index on messages.id both read the session's whole history
-- (5 ms for a session of 20,000 messages, on SQLite). Only user messages can be a steered input, so only
-- they are indexed: no cost on the assistant and tool messages a run writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_user_id ON messages (id) WHERE role = 'user';

-- A run's messages are read in seq order (its plan, its final answer): with seq in the index
-- they come out in order, with no sort. The new index is built before the old one is dropped,
-- so the reads it serves always have one.
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_run_seq ON messages (run_id, seq);
DROP INDEX CONCURRENTLY IF EXISTS messages_run;

-- Due deliveries are claimed in (next_attempt_at, id) order: the index gives that order.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_due_order ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending';
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_due;
