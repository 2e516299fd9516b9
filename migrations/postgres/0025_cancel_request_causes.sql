-- See migrations/sqlite/0025_cancel_request_causes.sql. A nullable column without a default:
-- `runs` is locked for a moment, nothing is rewritten.
ALTER TABLE runs ADD COLUMN cancel_requested_by TEXT;
