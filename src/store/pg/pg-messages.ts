import type pg from "pg";
import { finalAnswerOf, type MessageRow, messageFromRow } from "../messages.js";
import type { Store } from "../store.js";
import { pgPages } from "./pg-pages.js";

type Rows = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>;
type First = <R extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<R | null>;

/** A session's messages over PostgreSQL (written in the commits of pg-changes.ts). */
export function pgMessages(rows: Rows, first: First): Store["messages"] {
  return {
    history: async (sessionId, afterSeq = 0) =>
      (
        await rows<MessageRow>("SELECT * FROM messages WHERE session_id = $1 AND seq > $2::bigint ORDER BY seq", [
          sessionId,
          afterSeq,
        ])
      ).map(messageFromRow),
    page: pgPages(rows).messages,
    ofRun: async (sessionId, runId, afterSeq = 0) =>
      (
        await rows<MessageRow>(
          "SELECT * FROM messages WHERE session_id = $1 AND run_id = $2 AND seq > $3::bigint ORDER BY seq",
          [sessionId, runId, afterSeq],
        )
      ).map(messageFromRow),
    anyOfRun: async (sessionId, runId) =>
      (await first("SELECT 1 AS one FROM messages WHERE session_id = $1 AND run_id = $2 LIMIT 1", [
        sessionId,
        runId,
      ])) !== null,
    finalAnswer: async (sessionId, runId) =>
      finalAnswerOf(
        (await first<{ content: string; tool_calls: string | null }>(
          `SELECT content, tool_calls FROM messages WHERE session_id = $1 AND run_id = $2 AND role = 'assistant'
         ORDER BY seq DESC LIMIT 1`,
          [sessionId, runId],
        )) ?? undefined,
      ),
    lastSeq: async (sessionId) =>
      (await first<{ seq: number | null }>("SELECT max(seq) AS seq FROM messages WHERE session_id = $1", [sessionId]))
        ?.seq ?? 0,
    userMessageHolds: async (sessionId, id, content) => {
      const row = await first<{ run_id: string; same: boolean }>(
        "SELECT run_id, content = $3 AS same FROM messages WHERE session_id = $1 AND id = $2 AND role = 'user'",
        [sessionId, id, content],
      );
      return row ? { runId: row.run_id, same: row.same } : null;
    },
  };
}
