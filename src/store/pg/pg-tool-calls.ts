import type pg from "pg";
import type { Store } from "../store.js";
import {
  REST_OF_REPLY_SQL,
  type ReplyCall,
  STATUS_COLUMNS,
  type ToolCallRow,
  toolCallFromRow,
  toolCallStatusFromRow,
} from "../tool-calls.js";
import { awaitingApprovalPage } from "./pg-run-lists.js";

type Rows = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>;
type First = <R extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<R | null>;

/** The tool-call ledger's reads over PostgreSQL (written in the commits of pg-changes.ts). */
export function pgToolCalls(rows: Rows, first: First): Store["toolCalls"] {
  return {
    get: async (runId, id) => {
      const row = await first<ToolCallRow>("SELECT * FROM tool_calls WHERE run_id = $1 AND id = $2", [runId, id]);
      return row ? toolCallFromRow(row) : null;
    },
    status: async (runId, id) => {
      const row = await first<Omit<ToolCallRow, "input">>(
        `SELECT ${STATUS_COLUMNS} FROM tool_calls WHERE run_id = $1 AND id = $2`,
        [runId, id],
      );
      return row ? toolCallStatusFromRow(row) : null;
    },
    restOfReply: (runId, id) => rows<ReplyCall>(REST_OF_REPLY_SQL("$1", "$2"), [runId, id]),
    open: async (runId) =>
      (
        await rows<ToolCallRow>("SELECT * FROM tool_calls WHERE run_id = $1 AND state <> 'finished' ORDER BY ordinal", [
          runId,
        ])
      ).map(toolCallFromRow),
    inState: async (runId, state) =>
      (
        await rows<ToolCallRow>("SELECT * FROM tool_calls WHERE run_id = $1 AND state = $2 ORDER BY ordinal", [
          runId,
          state,
        ])
      ).map(toolCallFromRow),
    awaitingApproval: (query) => awaitingApprovalPage(rows, query),
  };
}
