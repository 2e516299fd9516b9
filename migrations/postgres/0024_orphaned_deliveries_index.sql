-- migrate: no transaction
-- The settled deliveries whose run is gone, which the store drops: an index of them alone.
-- Built CONCURRENTLY, outside a transaction (0022 holds runs locked against reads while it
-- commits): the running instances go on meanwhile. A database 0022 gave it already keeps it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_orphaned ON webhook_deliveries (id) WHERE (run_id IS NULL) AND (status <> 'pending');
