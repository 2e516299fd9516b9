import { api } from "./api.js";

/** The most pages of a list the console reads at once (each at most 200 items and 1 MiB of JSON). */
export const MAX_PAGES = 25;

/**
 * Items of a list endpoint from its start (or from cursor `from`), following `nextCursor`
 * page after page, `limit` items a page, up to `maxPages` pages. `cursor` is where to go on
 * from, null when the list was read to its end (else the list was cut: more items follow).
 */
export async function readPages<T>(
  path: string,
  maxPages = MAX_PAGES,
  from: string | null = null,
  limit = 200,
): Promise<{ items: T[]; cursor: string | null }> {
  const items: T[] = [];
  let cursor = from;
  for (let page = 0; page < maxPages; page++) {
    const query = `limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const body = await api("GET", `${path}${path.includes("?") ? "&" : "?"}${query}`);
    items.push(...(body.items as T[]));
    cursor = body.nextCursor ?? null;
    if (cursor === null) break;
  }
  return { items, cursor };
}
