-- The PostgreSQL store keeps a text value holding U+0000 (which PostgreSQL refuses) encoded,
-- as U+FFFF then its JSON string literal, and decodes every value it reads that starts with
-- U+FFFF (src/store/pg/pg-text.ts). A value stored before that starts with U+FFFF is encoded
-- here the same way, so that it reads back as it was written. Each table is scanned once; only
-- such rows (in practice none) are rewritten.
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN
    SELECT c.table_name,
      string_agg(format('%1$I = CASE WHEN left(%1$I, 1) = chr(65535) THEN chr(65535) || to_json(%1$I)::text ELSE %1$I END',
        c.column_name), ', ') AS sets,
      string_agg(format('left(%I, 1) = chr(65535)', c.column_name), ' OR ') AS encoded
    FROM information_schema.columns c
    JOIN information_schema.tables b ON b.table_schema = c.table_schema AND b.table_name = c.table_name
    WHERE c.table_schema = current_schema() AND b.table_type = 'BASE TABLE' AND c.data_type = 'text'
      AND c.table_name <> 'schema_migrations'
    GROUP BY c.table_name
  LOOP
    EXECUTE format('UPDATE %I SET %s WHERE %s', t.table_name, t.sets, t.encoded);
  END LOOP;
END $$;
