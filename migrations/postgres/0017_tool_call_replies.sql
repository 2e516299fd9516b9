-- The reply that proposed a call, named by the ordinal of the reply's first call (as
-- migrations/sqlite/0017, which says why).
--
-- Rows written before this migration keep NULL, no backfill: the ledger holds nothing that
-- tells replies of one millisecond apart, and a nullable column without a default is added
-- without rewriting or scanning the table. An instance of the version before this one, still
-- running beside a migrated one during a rolling restart, also goes on writing rows without
-- it: the store reads a call whose reply is NULL as before, with the other calls of its run of
-- NULL reply and the same proposed_at (see REST_OF_REPLY_SQL in src/store/tool-calls.ts).
ALTER TABLE tool_calls ADD COLUMN reply INTEGER;
