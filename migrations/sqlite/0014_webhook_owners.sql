-- A delivery's owner: its run's session's owner, '' for none (the keyless server's one owner).
-- The worker claims a few due deliveries of each owner from its own range of the index, so one
-- owner's backlog (a flood aimed at a target that never answers) cannot take every slot.
ALTER TABLE webhook_deliveries ADD COLUMN owner TEXT NOT NULL DEFAULT '';
UPDATE webhook_deliveries SET owner = coalesce(
  (SELECT s.owner FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = webhook_deliveries.run_id), '');
CREATE INDEX webhook_deliveries_owner_due ON webhook_deliveries (owner, next_attempt_at, id) WHERE status = 'pending';
