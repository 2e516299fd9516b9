import type { Writable } from "node:stream";
import { DatabaseError, type Pool, type PoolClient, type QueryResult } from "pg";
import type { StoreConflictError } from "../errors.js";
import { translateBatchError } from "./pg-errors.js";
import { decodeRows, encodeValues } from "./pg-text.js";

/** One statement of a batch, as data. */
export interface Statement {
  text: string;
  values?: unknown[];
  /**
   * When the statement changes no row (a SELECT: finds none), the batch is refused with this
   * conflict. The check runs in the server (see `checked`): the batch's COMMIT is already on
   * its way by then.
   */
  orRefuse?: () => StoreConflictError;
}

/** SQLSTATE of agent_expect_rows (migration 0009): the statement changed no row. */
const NO_ROW_CHANGED = "AG001";

/**
 * The statement as sent: one whose refusal depends on its row count (rows changed, or for a
 * SELECT rows found) raises AG001 in the server when there are none.
 */
const checked = (statement: Statement): string => {
  if (!statement.orRefuse) return statement.text;
  const rows = /^\s*SELECT\b/i.test(statement.text) ? statement.text : `${statement.text} RETURNING 1`;
  return `WITH changed AS (${rows}) SELECT agent_expect_rows(count(*)) FROM changed`;
};

/**
 * Runs `statements` in one transaction on one pooled connection, all or nothing, in one round
 * trip: BEGIN, the statements and COMMIT are written at once (the pool's connections pipeline
 * their queries) and the server runs them in order. A statement that fails aborts the
 * transaction, so everything after it fails and the COMMIT rolls back; the first failure is
 * thrown, translated (translateBatchError: a refused statement as its conflict, a connection that
 * broke before the answers came as an unknown outcome). The batch is data, built before it starts,
 * so no other work can run inside it. Its text values are sent encoded and its rows read back
 * decoded (see pg-text.ts). A connection whose state is unknown afterwards (BEGIN or COMMIT
 * failed, or a statement failed without the server's answer: the query timeout, a broken
 * connection) is released with the error, which makes the pool destroy it, never hand it out again.
 */
export async function runBatch(pool: Pool, statements: readonly Statement[]): Promise<QueryResult[]> {
  const client = await pool.connect();
  // A checked-out connection that breaks emits "error" (its queries fail too, and are handled
  // below): without a listener it would be thrown at the process.
  const ignore = () => {};
  client.on("error", ignore);
  let broken: Error | undefined;
  try {
    // The whole batch leaves in one write: node-postgres writes each statement as it is
    // queried (a pipelined connection sends at once), corking its socket per statement only.
    const socket = socketOf(client);
    socket?.cork?.();
    let sent: Promise<QueryResult>[];
    try {
      sent = [
        client.query("BEGIN"),
        ...statements.map((statement) => client.query(checked(statement), encodeValues(statement.values))),
        client.query("COMMIT"),
      ];
    } finally {
      socket?.uncork?.();
    }
    const settled = await Promise.allSettled(sent);
    const failed = settled.findIndex((outcome) => outcome.status === "rejected");
    if (failed >= 0) {
      const reason = (settled[failed] as PromiseRejectedResult).reason as { code?: unknown };
      const statement = statements[failed - 1];
      if (reason?.code === NO_ROW_CHANGED && statement?.orRefuse) throw statement.orRefuse();
      if (failed === 0 || failed === sent.length - 1 || !(reason instanceof DatabaseError))
        broken = reason instanceof Error ? reason : new Error(String(reason));
      throw translateBatchError(reason, { onCommit: failed === sent.length - 1 });
    }
    return settled.slice(1, -1).map((outcome) => {
      const result = (outcome as PromiseFulfilledResult<QueryResult>).value;
      decodeRows(result.rows);
      return result;
    });
  } finally {
    client.off("error", ignore);
    client.release(broken);
  }
}

/** The socket under a pooled client (node-postgres keeps it as `connection.stream`, which its queries cork too). */
const socketOf = (client: PoolClient): Partial<Pick<Writable, "cork" | "uncork">> | undefined =>
  (client as unknown as { connection?: { stream?: Writable } }).connection?.stream;

/** `INSERT INTO table (columns) VALUES ($1, ...)` for one row given as a column → value object. */
export function insertStatement(table: string, row: Record<string, unknown>): Statement {
  const columns = Object.keys(row);
  return {
    text: `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`,
    values: Object.values(row),
  };
}
