-- Why a delivery failed, in words (GET /runs/{id}/webhooks shows it): its retry window ended,
-- its target was refused, or it was given up unsent because its key (owner) already had
-- WEBHOOK_MAX_PENDING_PER_KEY deliveries pending. NULL unless failed (and for deliveries that
-- failed before this column).
ALTER TABLE webhook_deliveries ADD COLUMN reason TEXT;
