-- Who asked to cancel a run, as its stop detail says it ("by a DELETE /runs/{id} request",
-- "because its session was deleted"), stored with the cancel request (the first request's, as
-- its time): the instance executing the run, which may not be the one that took the request,
-- ends the run with it. NULL for a request stored without one (by a release before this
-- migration): a DELETE /runs/{id}.
ALTER TABLE runs ADD COLUMN cancel_requested_by TEXT;
