-- The settled deliveries whose run is gone, which the store drops: an index of them alone. A
-- database 0022 gave it already keeps it (IF NOT EXISTS). PostgreSQL builds it concurrently.
CREATE INDEX IF NOT EXISTS webhook_deliveries_orphaned ON webhook_deliveries (id) WHERE (run_id IS NULL) AND (status <> 'pending');
