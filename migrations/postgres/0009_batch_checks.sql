-- A batch of a run's changes is sent to the server in one go (pipelined), so a statement that
-- must change a row to be valid (a decision of an undecided call, the end of a live run, the
-- fence of a lease) checks it in the server: agent_expect_rows raises SQLSTATE AG001 when no
-- row changed, which aborts the transaction before its COMMIT can take effect.
CREATE FUNCTION agent_expect_rows(changed bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
  IF changed = 0 THEN
    RAISE EXCEPTION 'the statement changed no row' USING ERRCODE = 'AG001';
  END IF;
  RETURN changed;
END
$$;
