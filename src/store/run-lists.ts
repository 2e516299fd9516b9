import type { StepTrace } from "../agent/step-trace.js";
import type { Db } from "./database.js";
import { type ListPage, PAGE_BYTES, type RunPageQuery, readSizedPage } from "./page.js";
import { stepOfRow } from "./steps.js";
import { type ToolCallRecord, type ToolCallRow, toolCallFromRow } from "./tool-calls.js";
import { type DeliveryRow, LISTED_COLUMNS, listingFromRow, type WebhookListing } from "./webhooks.js";

/*
 * A run's lists as pages (see RunPageQuery): its steps by turn, its calls awaiting approval by
 * their ledger ordinal, its webhook deliveries by their event's seq. Each is a range of an
 * index that starts after the cursor (run_steps' and webhook_deliveries' keys, and
 * tool_calls_awaiting of migration 0018), its rows' stored sizes read first and then only the
 * rows a page holds (see rowsToRead). A list's SQL (its ListSql) is the same on SQLite and
 * PostgreSQL (pg-run-lists.ts); only the parameters are written differently.
 */

/** The stored bytes of a step (see rowsToRead). */
export const STEP_BYTES_SQL = "octet_length(data)";
/** The stored bytes of an approval's variable columns, its input with them (see rowsToRead). */
export const APPROVAL_BYTES_SQL = `octet_length(id) + octet_length(name) + octet_length(input)
  + coalesce(octet_length(approval_reason), 0) + coalesce(octet_length(decision_reason), 0)`;
/** The stored bytes of a listed delivery's variable columns (its body is not listed; see rowsToRead). */
export const DELIVERY_BYTES_SQL = `octet_length(id) + octet_length(type) + octet_length(url) + octet_length(attempts)
  + coalesce(octet_length(reason), 0)`;

/** A list's SQL: the columns of its rows, their stored sizes, its key and the filter of its rows among the run's. */
export interface ListSql {
  columns: string;
  sizeSql: string;
  key: string;
  filter?: string;
}
export const STEPS: ListSql = { columns: "turn, data", sizeSql: STEP_BYTES_SQL, key: "turn" };
/** The filter is tool_calls_awaiting's own (its WHERE): the page is a range of that index. */
export const AWAITING: ListSql = {
  columns: "*",
  sizeSql: APPROVAL_BYTES_SQL,
  key: "ordinal",
  filter: " AND state = 'awaiting_approval'",
};
/** A listed delivery's columns: the listing's (no body), and its page's key. */
export const DELIVERIES: ListSql = {
  columns: `${LISTED_COLUMNS}, event_seq`,
  sizeSql: DELIVERY_BYTES_SQL,
  key: "event_seq",
};

/** The key a page without a cursor starts after: below every turn, ordinal and seq. */
export const BEFORE_FIRST = -1;

/** A call of the ledger with its ordinal: the key of a page of a run's approvals. */
export type LedgerCall = ToolCallRecord & { ordinal: number };
/** A delivery as its run's listing shows it, with its event's seq: the key of a page of them. */
export type ListedDelivery = WebhookListing & { eventSeq: number };

export type LedgerCallRow = ToolCallRow & { ordinal: number };
export type ListedDeliveryRow = Omit<DeliveryRow, "body" | "run_id"> & { run_id: string; event_seq: number };

export const ledgerCallFromRow = (row: LedgerCallRow): LedgerCall => ({
  ...toolCallFromRow(row),
  ordinal: row.ordinal,
});
export const listedDeliveryFromRow = (row: ListedDeliveryRow): ListedDelivery => ({
  ...listingFromRow(row),
  eventSeq: row.event_seq,
});

/** The SQLite statements of a run's list pages (see the store's `steps.page`, `toolCalls.awaitingApproval`, `webhooks.page`). */
export function runListStore(db: Db) {
  /** The sizes' and the rows' reads of a list of `table` by `key` (`filter`: its rows of the run), its rows' `columns`. */
  const list = (table: string, { columns, sizeSql, key, filter = "" }: ListSql) => {
    const from = `FROM ${table} WHERE run_id = +@run${filter} AND ${key} > +@after ORDER BY ${key} LIMIT +@limit`;
    return { sizes: db.prepare(`SELECT ${sizeSql} ${from}`).pluck(), rows: db.prepare(`SELECT ${columns} ${from}`) };
  };
  const steps = list("run_steps", STEPS);
  const awaiting = list("tool_calls", AWAITING);
  const deliveries = list("webhook_deliveries", DELIVERIES);

  const page = <Row, T>(
    statements: ReturnType<typeof list>,
    { runId, after, limit, bytes = PAGE_BYTES }: RunPageQuery,
    map: (row: Row) => T,
    cursorOf: (item: T) => string,
  ): ListPage<T> => {
    const at = (count: number) => ({ run: runId, after: after ?? BEFORE_FIRST, limit: count });
    return readSizedPage({
      limit,
      bytes,
      sizes: (count) => statements.sizes.all(at(count)) as number[],
      rows: (count) => statements.rows.all(at(count)) as Row[],
      map,
      cursorOf,
    });
  };

  return {
    steps: (query: RunPageQuery): ListPage<StepTrace> =>
      page(steps, query, stepOfRow(query.runId), (step) => String(step.turn)),
    awaitingApproval: (query: RunPageQuery): ListPage<LedgerCall> =>
      page(awaiting, query, ledgerCallFromRow, (call) => String(call.ordinal)),
    deliveries: (query: RunPageQuery): ListPage<ListedDelivery> =>
      page(deliveries, query, listedDeliveryFromRow, (delivery) => String(delivery.eventSeq)),
  };
}
