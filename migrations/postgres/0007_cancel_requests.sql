-- A client's request to cancel a run, written by whichever instance took it: the instance
-- executing the run acts on it (woken by a notification, or by its poll). Once set, the run's
-- status stays 'cancelling' until it finishes.
ALTER TABLE runs ADD COLUMN cancel_requested_at TEXT;
