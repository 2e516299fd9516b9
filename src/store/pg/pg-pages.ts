import type pg from "pg";
import { isUserMessageSql } from "../events.js";
import { MESSAGE_BYTES_SQL, type MessageRow, messageFromRow } from "../messages.js";
import { countWithin, type ListPage, PAGE_BYTES, rowsToRead, toPage } from "../page.js";
import { RUN_BYTES_SQL, type RunRow, runFromRow } from "../runs.js";
import { SESSION_BYTES_SQL, type SessionRow, sessionFromRow } from "../sessions.js";
import type { Store, StoredEvent } from "../store.js";

export type Rows = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>;

/**
 * A page of large rows over PostgreSQL, as over SQLite: first the stored sizes of the first
 * `limit + 1` rows (`octet_length` reads a value's length, not its content, also for one kept
 * out of line), then only the rows those sizes fit in `bytes` (see rowsToRead). `from` is the
 * query after `SELECT <columns>` (`columns`, every one by default, `key` among them) up to its
 * ORDER BY (`order`, by `key`), whose values are `values`. The two reads see the database at
 * different moments (see `shifted`).
 */
export async function readPage<Row extends pg.QueryResultRow, T>(
  rows: Rows,
  query: {
    columns?: string;
    sizeSql: string;
    from: string;
    key: string;
    descending: boolean;
    values: unknown[];
    limit: number;
    bytes: number;
  },
  { map, cursorOf }: { map: (row: Row) => T; cursorOf: (item: T) => string },
): Promise<ListPage<T>> {
  const order = `ORDER BY ${query.key}${query.descending ? " DESC" : ""}`;
  const at = (n: number) => `$${query.values.length + n}`;
  const sized = await rows<{ bytes: number; key: unknown }>(
    `SELECT ${query.key} AS key, ${query.sizeSql} AS bytes ${query.from} ${order} LIMIT ${at(1)}`,
    [...query.values, query.limit + 1],
  );
  const count = rowsToRead(
    sized.map((r) => Number(r.bytes)),
    query,
  );
  const found =
    count === 0
      ? []
      : await rows<Row>(`SELECT ${query.columns ?? "*"} ${query.from} ${order} LIMIT ${at(1)}`, [
          ...query.values,
          count,
        ]);
  // A row inserted meanwhile ahead of the counted ones pushes the last of them out of this
  // page: then there is a next page, which starts with it.
  const shifted = count > 0 && String(found.at(-1)?.[query.key]) !== String(sized[count - 1]?.key);
  return toPage(found, { more: sized.length > count || shifted, map, cursorOf });
}

/** The lists of sessions, runs and messages over PostgreSQL, each bounded in bytes. */
export function pgPages(rows: Rows) {
  return {
    sessions: (async ({ owner, limit, cursor, bytes = PAGE_BYTES }) => {
      // The owner as `= $1` or `IS NULL` (`IS NOT DISTINCT FROM` cannot search an index), and
      // first page and later pages apart, so a cursor bounds the index range also in a generic
      // plan (see the SQLite store's sessions.ts).
      const values: unknown[] = [];
      if (owner !== null) values.push(owner);
      if (cursor !== null) values.push(cursor);
      const ownedBy = owner === null ? "owner IS NULL" : "owner = $1";
      const after = cursor === null ? "" : ` AND id < $${values.length}`;
      return readPage<SessionRow, ReturnType<typeof sessionFromRow>>(
        rows,
        {
          sizeSql: SESSION_BYTES_SQL,
          from: `FROM sessions WHERE ${ownedBy}${after}`,
          key: "id",
          descending: true,
          values,
          limit,
          bytes,
        },
        { map: sessionFromRow, cursorOf: (s) => s.id },
      );
    }) satisfies Store["sessions"]["list"],
    runs: (async ({ sessionId, limit, cursor, bytes = PAGE_BYTES }) =>
      readPage<RunRow, ReturnType<typeof runFromRow>>(
        rows,
        {
          sizeSql: RUN_BYTES_SQL,
          from: cursor === null ? "FROM runs WHERE session_id = $1" : "FROM runs WHERE session_id = $1 AND id < $2",
          key: "id",
          descending: true,
          values: cursor === null ? [sessionId] : [sessionId, cursor],
          limit,
          bytes,
        },
        { map: runFromRow, cursorOf: (r) => r.id },
      )) satisfies Store["runs"]["list"],
    messages: (async ({ sessionId, afterSeq, beforeSeq, limit, bytes = PAGE_BYTES }) =>
      readPage<MessageRow, ReturnType<typeof messageFromRow>>(
        rows,
        {
          sizeSql: MESSAGE_BYTES_SQL,
          // The key as bigint (see MAX_KEY): the first page of the newest is before MAX_KEY + 1.
          from: `FROM messages WHERE session_id = $1 AND seq ${beforeSeq === undefined ? ">" : "<"} $2::bigint`,
          key: "seq",
          descending: beforeSeq !== undefined,
          values: [sessionId, beforeSeq ?? afterSeq],
          limit,
          bytes,
        },
        { map: messageFromRow, cursorOf: (m) => String(m.seq) },
      )) satisfies Store["messages"]["page"],
  };
}

/** PostgreSQL's test that a row of run_events is a user message's event (see isUserMessageSql). */
const IS_USER_MESSAGE = isUserMessageSql("strpos");

/**
 * A run's events after `seq` within `limit` and `bytes` (at least one), as over SQLite: their
 * stored sizes first, then only the events those fit. Events are appended in seq order, so
 * nothing read can shift between the two reads.
 */
export async function eventsWithin(
  rows: Rows,
  runId: string,
  seq: number,
  page: { limit: number; bytes: number; withoutUserMessages?: boolean },
): Promise<{ events: StoredEvent[]; more: boolean }> {
  const where = `FROM run_events WHERE run_id = $1 AND seq > $2::bigint ${page.withoutUserMessages ? `AND NOT ${IS_USER_MESSAGE}` : ""} ORDER BY seq LIMIT $3`;
  const found = await rows<{ bytes: number }>(`SELECT octet_length(data) AS bytes ${where}`, [
    runId,
    seq,
    page.limit + 1,
  ]);
  const count = Math.min(
    page.limit,
    countWithin(
      found.map((r) => Number(r.bytes)),
      page.bytes,
    ),
  );
  const events = count === 0 ? [] : await rows<StoredEvent>(`SELECT seq, type, data ${where}`, [runId, seq, count]);
  return { events, more: found.length > count };
}
