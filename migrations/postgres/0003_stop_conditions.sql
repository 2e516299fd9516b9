-- New stop reasons (loop_detected, budget_exhausted) and each stop's explanation; a run's
-- budgets, loop-guard limit and planning switch; a session's planning switch (as
-- migrations/sqlite/0003, where the runs table is rebuilt; PostgreSQL alters the CHECK in place).
ALTER TABLE runs DROP CONSTRAINT runs_stop_reason_check;
ALTER TABLE runs ADD CONSTRAINT runs_stop_reason_check
  CHECK (stop_reason IN ('complete', 'max_turns', 'aborted', 'error', 'loop_detected', 'budget_exhausted'));
ALTER TABLE runs ADD COLUMN stop_detail TEXT;
ALTER TABLE runs ADD COLUMN max_tokens INTEGER;
ALTER TABLE runs ADD COLUMN max_duration_ms INTEGER;
ALTER TABLE runs ADD COLUMN max_tool_calls INTEGER;
ALTER TABLE runs ADD COLUMN loop_repeat_limit INTEGER NOT NULL DEFAULT 3;
ALTER TABLE runs ADD COLUMN planning INTEGER NOT NULL DEFAULT 0;

ALTER TABLE sessions ADD COLUMN planning INTEGER NOT NULL DEFAULT 0;
