-- See migrations/sqlite/0021_plan_events.sql.
CREATE INDEX run_events_plans ON run_events (run_id, seq) WHERE type = 'plan.updated';
