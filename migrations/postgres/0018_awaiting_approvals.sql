-- migrate: no transaction
-- A run's calls awaiting approval are listed in pages (GET /runs/{id}/approvals), in ledger
-- order after a cursor. The ledger's key is (run_id, id): without this index a page read every
-- call of the run (each with its input, up to 1 MB) to find the few awaiting. Only calls
-- awaiting approval are indexed: a run's other calls cost nothing more to write.
-- Built CONCURRENTLY, outside a transaction: the running instances' writes go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tool_calls_awaiting ON tool_calls (run_id, ordinal) WHERE state = 'awaiting_approval';
