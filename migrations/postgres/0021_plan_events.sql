-- migrate: no transaction
-- See migrations/sqlite/0021_plan_events.sql. Built CONCURRENTLY, outside a transaction: every
-- run's events go on being written meanwhile, however long the build over run_events takes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS run_events_plans ON run_events (run_id, seq) WHERE type = 'plan.updated';
