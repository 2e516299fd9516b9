/** A page of a list, as every list route answers. */
export interface ListPage<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * Builds a page from rows fetched with `LIMIT limit + 1`: the extra row only says
 * that another page exists; the cursor is taken from the page's last item.
 */
export function toPage<Row, T>(
  rows: Row[],
  { limit, map, cursorOf }: { limit: number; map: (row: Row) => T; cursorOf: (item: T) => string },
): ListPage<T> {
  const items = rows.slice(0, limit).map(map);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
