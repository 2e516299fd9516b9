-- See migrations/sqlite/0023_steered_input_run_settings.sql.
ALTER TABLE run_inputs ADD COLUMN run_settings TEXT;
