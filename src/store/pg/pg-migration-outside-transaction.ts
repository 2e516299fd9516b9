import pg from "pg";

/**
 * A PostgreSQL migration whose first line is this runs outside a transaction, statement by
 * statement: what a transaction cannot hold (CREATE INDEX CONCURRENTLY, DROP INDEX
 * CONCURRENTLY, which do not hold the other instances' writes to the table while they work).
 * Its version is recorded only once every statement succeeded; a file that failed part way is
 * run again whole at the next start, so each of its statements must be re-runnable
 * (`IF NOT EXISTS`, `IF EXISTS`).
 */
export const NO_TRANSACTION = "-- migrate: no transaction";

/** Whether a migration's first line asks for it to run outside a transaction. */
export function runsOutsideTransaction(sql: string): boolean {
  return sql.split("\n", 1)[0]?.trim() === NO_TRANSACTION;
}

/**
 * A migration's statements, split at each `;` outside a quoted string or identifier, comments
 * left out. Dollar-quoted bodies are not recognised: such a file runs in a transaction.
 */
export function sqlStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = "";
  let i = 0;
  while (i < sql.length) {
    const c = sql[i] as string;
    if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end === -1 ? sql.length : end;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end === -1 ? sql.length : end + 2;
      current += " ";
    } else if (c === "'" || c === '"') {
      const end = quotedEnd(sql, i);
      current += sql.slice(i, end);
      i = end;
    } else if (c === ";") {
      statements.push(current);
      current = "";
      i++;
    } else {
      current += c;
      i++;
    }
  }
  statements.push(current);
  return statements.map((s) => s.trim()).filter((s) => s.length > 0);
}

/** The index just past the quoted string or identifier opening at `start` (a doubled quote stays inside). */
function quotedEnd(sql: string, start: number): number {
  const quote = sql[start];
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] !== quote) return i + 1;
      i += 2;
    } else i++;
  }
  return sql.length;
}

const CONCURRENT_BUILD = /^CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+([A-Za-z_][\w$]*)\s/i;

/**
 * Runs a migration's statements one by one, outside a transaction (see NO_TRANSACTION). A
 * concurrent build that failed (or whose connection was lost) leaves its index INVALID, which
 * `IF NOT EXISTS` would take for built: before a `CREATE [UNIQUE] INDEX CONCURRENTLY IF NOT
 * EXISTS <name>` such an index is dropped (concurrently) and built again, and one that this
 * build leaves invalid is dropped when the connection still can. Throws the first statement's
 * error, the statements after it not run.
 */
export async function applyOutsideTransaction({ client, sql }: { client: pg.Client; sql: string }): Promise<void> {
  for (const statement of sqlStatements(sql)) {
    const index = CONCURRENT_BUILD.exec(statement)?.[1]?.toLowerCase();
    if (index) await dropIfInvalid({ client, index });
    try {
      await client.query(statement);
    } catch (err) {
      if (index) await dropIfInvalid({ client, index }).catch(() => {});
      throw err;
    }
  }
}

/** Drops the index `index` (an unquoted name, resolved by the search path) if it exists and is INVALID. */
async function dropIfInvalid({ client, index }: { client: pg.Client; index: string }): Promise<void> {
  const name = pg.escapeIdentifier(index);
  const { rows } = await client.query<{ invalid: boolean }>(
    "SELECT NOT indisvalid AS invalid FROM pg_index WHERE indexrelid = to_regclass($1)",
    [name],
  );
  if (rows[0]?.invalid) await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
}
