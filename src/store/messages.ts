import { AgentMessageSchema } from "../agent/messages.js";
import type { StoredMessage } from "../domain/stored-message.js";
import type { Db } from "./database.js";
import { CorruptRowError, toJson } from "./json.js";
import { type ListPage, PAGE_BYTES, readSizedPage } from "./page.js";

/** The stored bytes of a message's variable columns (see rowsToRead); the same SQL over SQLite and PostgreSQL. */
export const MESSAGE_BYTES_SQL = `octet_length(id) + octet_length(run_id) + octet_length(content)
  + coalesce(octet_length(tool_calls), 0) + coalesce(octet_length(tool_call_id), 0) + coalesce(octet_length(metadata), 0)`;

export interface MessageRow {
  id: string;
  session_id: string;
  run_id: string;
  seq: number;
  role: string;
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
  is_error: number | null;
  metadata: string | null;
  created_at: string;
}

export function messageFromRow(row: MessageRow): StoredMessage {
  let raw: Record<string, unknown>;
  try {
    raw = { id: row.id, role: row.role, content: row.content };
    if (row.tool_calls !== null) raw.toolCalls = JSON.parse(row.tool_calls);
    if (row.tool_call_id !== null) raw.toolCallId = row.tool_call_id;
    if (row.is_error !== null) raw.isError = row.is_error === 1;
    if (row.metadata !== null) raw.metadata = JSON.parse(row.metadata);
  } catch {
    throw new CorruptRowError(`message ${row.id}: stored JSON does not parse`);
  }
  const parsed = AgentMessageSchema.safeParse(raw);
  if (!parsed.success)
    throw new CorruptRowError(`message ${row.id} does not match its schema: ${parsed.error.message}`);
  return { ...parsed.data, sessionId: row.session_id, runId: row.run_id, seq: row.seq, createdAt: row.created_at };
}

/** The columns a message is inserted with. */
export function messageColumns(message: StoredMessage) {
  return {
    id: message.id,
    session_id: message.sessionId,
    run_id: message.runId,
    seq: message.seq,
    role: message.role,
    content: message.content,
    tool_calls: message.role === "assistant" ? toJson(message.toolCalls) : null,
    tool_call_id: message.role === "tool" ? message.toolCallId : null,
    is_error: message.role === "tool" ? (message.isError ? 1 : 0) : null,
    metadata: message.role === "user" ? null : toJson(message.metadata),
    created_at: message.createdAt,
  };
}

/** The run's answer from its last assistant message (see MessageStore.finalAnswer). */
export function finalAnswerOf(row: { content: string; tool_calls: string | null } | undefined): string | null {
  if (!row || row.content === "") return null;
  const calls = row.tool_calls === null ? [] : (JSON.parse(row.tool_calls) as unknown[]);
  return calls.length === 0 ? row.content : null;
}

export function messageStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO messages (id, session_id, run_id, seq, role, content, tool_calls, tool_call_id, is_error, metadata, created_at)
     VALUES (@id, @session_id, @run_id, @seq, @role, @content, @tool_calls, @tool_call_id, @is_error, @metadata, @created_at)`,
  );
  const all = db.prepare("SELECT * FROM messages WHERE session_id = +? AND seq > +? ORDER BY seq");
  const page = db.prepare(
    "SELECT * FROM messages WHERE session_id = +@session AND seq > +@after ORDER BY seq LIMIT +@limit",
  );
  // The sizes of the rows a page may hold, before the rows themselves (see rowsToRead).
  const pageSizes = db
    .prepare(
      `SELECT ${MESSAGE_BYTES_SQL} FROM messages WHERE session_id = +@session AND seq > +@after ORDER BY seq LIMIT +@limit`,
    )
    .pluck();
  // The same, newest first: the messages before a seq.
  const pageBefore = db.prepare(
    "SELECT * FROM messages WHERE session_id = +@session AND seq < +@before ORDER BY seq DESC LIMIT +@limit",
  );
  const pageBeforeSizes = db
    .prepare(
      `SELECT ${MESSAGE_BYTES_SQL} FROM messages WHERE session_id = +@session AND seq < +@before ORDER BY seq DESC LIMIT +@limit`,
    )
    .pluck();
  const ofRun = db.prepare("SELECT * FROM messages WHERE session_id = +? AND run_id = +? AND seq > +? ORDER BY seq");
  const anyOfRun = db.prepare("SELECT 1 FROM messages WHERE session_id = +? AND run_id = +? LIMIT 1").pluck();
  // The last row of the session's (session_id, seq) index: cheaper in SQLite than max(seq).
  const lastSeq = db.prepare("SELECT seq FROM messages WHERE session_id = +? ORDER BY seq DESC LIMIT 1");
  const userMessage = db.prepare(
    "SELECT run_id, content = ? AS same FROM messages WHERE session_id = ? AND id = ? AND role = 'user'",
  );
  const lastAssistant = db.prepare(
    "SELECT content, tool_calls FROM messages WHERE session_id = +? AND run_id = +? AND role = 'assistant' ORDER BY seq DESC LIMIT 1",
  );

  return {
    /** Inserts one message; call inside the commit's transaction. */
    insert(message: StoredMessage): void {
      insert.run(messageColumns(message));
    },
    /** The whole committed history of a session, in order. */
    history(sessionId: string, afterSeq = 0): StoredMessage[] {
      return (all.all(sessionId, afterSeq) as MessageRow[]).map(messageFromRow);
    },
    /**
     * A page of the history: messages after `afterSeq`, in order, or before `beforeSeq`, newest
     * first; at most `limit`, and only as many as their stored sizes fit in `bytes` (at least
     * one; see rowsToRead).
     */
    page({
      sessionId,
      afterSeq,
      beforeSeq,
      limit,
      bytes = PAGE_BYTES,
    }: {
      sessionId: string;
      afterSeq: number;
      beforeSeq?: number;
      limit: number;
      bytes?: number;
    }): ListPage<StoredMessage> {
      const newest = beforeSeq !== undefined;
      const query = (count: number) =>
        newest
          ? { session: sessionId, before: beforeSeq, limit: count }
          : { session: sessionId, after: afterSeq, limit: count };
      return readSizedPage({
        limit,
        bytes,
        sizes: (count) => (newest ? pageBeforeSizes : pageSizes).all(query(count)) as number[],
        rows: (count) => (newest ? pageBefore : page).all(query(count)) as MessageRow[],
        map: messageFromRow,
        cursorOf: (m) => String(m.seq),
      });
    },
    ofRun(sessionId: string, runId: string, afterSeq = 0): StoredMessage[] {
      return (ofRun.all(sessionId, runId, afterSeq) as MessageRow[]).map(messageFromRow);
    },
    anyOfRun(sessionId: string, runId: string): boolean {
      return anyOfRun.get(sessionId, runId) !== undefined;
    },
    /**
     * The run's answer: the text of its last assistant message when that message is final (it
     * calls no tool); null when the run's last reply called tools (text written before tool
     * calls is narration, not an answer), was empty, or there was none.
     */
    finalAnswer(sessionId: string, runId: string): string | null {
      return finalAnswerOf(
        lastAssistant.get(sessionId, runId) as { content: string; tool_calls: string | null } | undefined,
      );
    },
    /** The seq of the session's last message, 0 when it has none. */
    lastSeq(sessionId: string): number {
      return (lastSeq.get(sessionId) as { seq: number } | undefined)?.seq ?? 0;
    },
    userMessageHolds(sessionId: string, id: string, content: string): { runId: string; same: boolean } | null {
      const row = userMessage.get(content, sessionId, id) as { run_id: string; same: number } | undefined;
      return row ? { runId: row.run_id, same: row.same === 1 } : null;
    },
  };
}

export type MessageStore = ReturnType<typeof messageStore>;
