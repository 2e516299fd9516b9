-- A view of a planning run (GET /runs/{id}, a page of a session's runs, an event stream's end)
-- shows the plan its last `plan.updated` event announced. This index holds only those events:
-- the run's last is one probe at the end of its range, however many other events the run has,
-- and no other event costs more to write.
CREATE INDEX run_events_plans ON run_events (run_id, seq) WHERE type = 'plan.updated';
