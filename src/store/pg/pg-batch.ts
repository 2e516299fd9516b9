import type { Pool, QueryResult } from "pg";
import type { StoreConflictError } from "../errors.js";

/** One statement of a batch, as data. */
export interface Statement {
  text: string;
  values?: unknown[];
  /** When the statement changes no row, the batch is refused with this conflict. */
  orRefuse?: () => StoreConflictError;
}

/**
 * Runs `statements` in one transaction on one pooled connection, all or nothing. This is the
 * only place a transaction spans awaits, and only the connection's own queries: the batch
 * is data, built before it starts, so no other work can run inside it.
 */
export async function runBatch(pool: Pool, statements: readonly Statement[]): Promise<QueryResult[]> {
  const client = await pool.connect();
  let broken: unknown;
  try {
    await client.query("BEGIN");
    const results: QueryResult[] = [];
    for (const statement of statements) {
      const result = await client.query(statement.text, statement.values);
      if (statement.orRefuse && result.rowCount === 0) throw statement.orRefuse();
      results.push(result);
    }
    await client.query("COMMIT");
    return results;
  } catch (err) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackErr) {
      broken = rollbackErr;
    }
    throw err;
  } finally {
    // A connection whose rollback failed is in an unknown state: it is dropped, not reused.
    client.release(broken instanceof Error ? broken : undefined);
  }
}

/** `INSERT INTO table (columns) VALUES ($1, ...)` for one row given as a column → value object. */
export function insertStatement(table: string, row: Record<string, unknown>): Statement {
  const columns = Object.keys(row);
  return {
    text: `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`,
    values: Object.values(row),
  };
}
