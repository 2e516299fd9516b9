-- The settings a steer sent with its input (JSON: maxTurns, contextMaxChars, budgets, loop guard,
-- planning, approval and resolved webhook target), which the run made of that input takes when
-- the run it was steered into ends without it. NULL for input stored before this migration: its
-- steer's settings are unknown (see queueLeftInput).
ALTER TABLE run_inputs ADD COLUMN run_settings TEXT;
