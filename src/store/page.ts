/**
 * The largest key a numbered list can hold (a message's or an event's seq, a turn, a ledger
 * ordinal): PostgreSQL stores them as INTEGER. A cursor past it is none this API gave. A read
 * after a key past it reads nothing on both backends: PostgreSQL's reads compare a key given
 * with such a column as `$n::bigint` (typed after the column, the parameter would fail 22003).
 */
export const MAX_KEY = 2_147_483_647;

/** The key a cursor of a numbered list names (digits, at most MAX_KEY), or null when it names none. */
export function keyOfCursor(cursor: string): number | null {
  const key = /^\d{1,10}$/.test(cursor) ? Number(cursor) : Number.NaN;
  return key <= MAX_KEY ? key : null;
}

/** A page of a list, as every list route answers. */
export interface ListPage<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * The most bytes a page of a list whose items can be large (sessions, runs, messages) is, as
 * JSON: it holds fewer than `limit` items when more would pass it, and its `nextCursor` goes on
 * from its last item. A page always holds at least one item (when there is any after the
 * cursor), so a client following the cursors always progresses: a page of one item larger
 * than this is the one exception.
 */
export const PAGE_BYTES = 1024 * 1024;

/** What a page's JSON adds to its items: `{"items":[`, `],"nextCursor":` and the cursor (at most 64 characters). */
const ENVELOPE_BYTES = 128;

/**
 * What a row's JSON is estimated to add to the stored lengths of its variable columns (the
 * field names, ids, timestamps, numbers): used only to decide how many rows to read.
 */
const ROW_BYTES = 512;

/** The UTF-8 bytes of `value` as JSON. */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/**
 * How many of the leading items of these sizes (in bytes, each followed by a comma) a page of
 * `bytes` holds: at least one when there is any.
 */
export function countWithin(sizes: Iterable<number>, bytes: number): number {
  let total = ENVELOPE_BYTES;
  let count = 0;
  for (const size of sizes) {
    total += size + 1;
    if (count > 0 && total > bytes) break;
    count++;
  }
  return count;
}

/**
 * How many rows a store reads for a page: `sizes` are the stored lengths of the variable
 * columns of the first `limit + 1` rows after the cursor, in the list's order (read with
 * `octet_length`, which neither SQLite nor PostgreSQL needs a value's content for), so that a
 * page of large rows never reads more of them than it may hold. Whether there is a next page
 * is `sizes.length > count`.
 */
export function rowsToRead(sizes: readonly number[], { limit, bytes }: { limit: number; bytes: number }): number {
  return Math.min(
    limit,
    countWithin(
      sizes.map((size) => Number(size) + ROW_BYTES),
      bytes,
    ),
  );
}

/**
 * Builds a page from the rows a store read (see rowsToRead): `more` says that rows follow
 * them; the cursor is taken from the page's last item.
 */
export function toPage<Row, T>(
  rows: Row[],
  { more, map, cursorOf }: { more: boolean; map: (row: Row) => T; cursorOf: (item: T) => string },
): ListPage<T> {
  const items = rows.map(map);
  const last = items[items.length - 1];
  return { items, nextCursor: more && last !== undefined ? cursorOf(last) : null };
}

/**
 * A page read as a store reads one: the stored sizes of the `limit + 1` rows after the cursor
 * (`sizes(n)`), then only the rows those fit in `bytes` (`rows(n)`, the first n; see rowsToRead).
 */
export function readSizedPage<Row, T>({
  limit,
  bytes,
  sizes,
  rows,
  map,
  cursorOf,
}: {
  limit: number;
  bytes: number;
  sizes: (count: number) => number[];
  rows: (count: number) => Row[];
  map: (row: Row) => T;
  cursorOf: (item: T) => string;
}): ListPage<T> {
  const found = sizes(limit + 1);
  const count = rowsToRead(found, { limit, bytes });
  return toPage(count === 0 ? [] : rows(count), { more: found.length > count, map, cursorOf });
}

/**
 * The page cut to its leading items whose JSON (as clients get them) fits `bytes` (see
 * countWithin); when items were cut, its cursor is the one of the last item kept (`cursorOf`
 * it and its index in the page: a list whose key is not in its items' JSON keeps the keys
 * aside). This is what bounds a page exactly: a stored length can be less than its JSON (escapes).
 */
export function withinBytes<T>(
  page: ListPage<T>,
  { cursorOf, bytes = PAGE_BYTES }: { cursorOf: (item: T, index: number) => string; bytes?: number },
): ListPage<T> {
  const count = countWithin(
    (function* () {
      for (const item of page.items) yield jsonBytes(item);
    })(),
    bytes,
  );
  if (count === page.items.length) return page;
  const items = page.items.slice(0, count);
  const last = items[items.length - 1];
  return { items, nextCursor: last === undefined ? null : cursorOf(last, items.length - 1) };
}

/**
 * A page of one of a run's lists (its steps, its calls awaiting approval, its webhook
 * deliveries): the items whose key (a turn, a ledger ordinal, an event's seq) is after `after`
 * (null: from the first), in key order, bounded by `limit` and `bytes` (PAGE_BYTES by default)
 * as a page of sessions is (see rowsToRead); the page's cursor is its last item's key.
 */
export interface RunPageQuery {
  runId: string;
  after: number | null;
  limit: number;
  bytes?: number;
}
