import type { StepTrace } from "../../agent/step-trace.js";
import { type ListPage, PAGE_BYTES, type RunPageQuery } from "../page.js";
import {
  AWAITING,
  BEFORE_FIRST,
  DELIVERIES,
  type LedgerCall,
  type LedgerCallRow,
  type ListedDelivery,
  type ListedDeliveryRow,
  type ListSql,
  ledgerCallFromRow,
  listedDeliveryFromRow,
  STEPS,
} from "../run-lists.js";
import { stepOfRow } from "../steps.js";
import type { Store } from "../store.js";
import { type Rows, readPage } from "./pg-pages.js";

/** A page of one of a run's lists of `table` over PostgreSQL, as over SQLite (see run-lists.ts). */
function runListPage<Row extends Record<string, unknown>, T>(
  rows: Rows,
  table: string,
  { columns, sizeSql, key, filter = "" }: ListSql,
  { runId, after, limit, bytes = PAGE_BYTES }: RunPageQuery,
  { map, cursorOf }: { map: (row: Row) => T; cursorOf: (item: T) => string },
): Promise<ListPage<T>> {
  return readPage<Row, T>(
    rows,
    {
      columns,
      sizeSql,
      from: `FROM ${table} WHERE run_id = $1${filter} AND ${key} > $2::bigint`,
      key,
      descending: false,
      values: [runId, after ?? BEFORE_FIRST],
      limit,
      bytes,
    },
    { map, cursorOf },
  );
}

/** A page of the run's calls awaiting approval (see `toolCalls.awaitingApproval`). */
export const awaitingApprovalPage = (rows: Rows, query: RunPageQuery): Promise<ListPage<LedgerCall>> =>
  runListPage<LedgerCallRow & Record<string, unknown>, LedgerCall>(rows, "tool_calls", AWAITING, query, {
    map: ledgerCallFromRow,
    cursorOf: (call) => String(call.ordinal),
  });

/** A page of the run's webhook deliveries (see `webhooks.page`). */
export const deliveriesPage = (rows: Rows, query: RunPageQuery): Promise<ListPage<ListedDelivery>> =>
  runListPage<ListedDeliveryRow & Record<string, unknown>, ListedDelivery>(
    rows,
    "webhook_deliveries",
    DELIVERIES,
    query,
    {
      map: listedDeliveryFromRow,
      cursorOf: (delivery) => String(delivery.eventSeq),
    },
  );

/** A run's step traces over PostgreSQL: all of them, or a page. */
export function pgSteps(rows: Rows): Store["steps"] {
  return {
    last: async (runId) => {
      const [row] = await rows<{ data: string }>(
        "SELECT data FROM run_steps WHERE run_id = $1 ORDER BY turn DESC LIMIT 1",
        [runId],
      );
      return row ? stepOfRow(runId)(row) : null;
    },
    page: (query) =>
      runListPage<{ turn: number; data: string }, StepTrace>(rows, "run_steps", STEPS, query, {
        map: stepOfRow(query.runId),
        cursorOf: (step) => String(step.turn),
      }),
  };
}
