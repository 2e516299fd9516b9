import { api } from "./api.js";

/** The most pages of a list the console reads at once (each at most 200 items and 1 MiB of JSON). */
export const MAX_PAGES = 25;

/**
 * The pages of a list endpoint from its start (or from cursor `from`), following `nextCursor`,
 * `limit` items a page, up to `maxPages` pages: each page's items, and `cursor`, where to go on
 * from after it (null when the list ends with it). The reader may stop at any page.
 */
export async function* pagesOf<T>(
  path: string,
  maxPages = MAX_PAGES,
  from: string | null = null,
  limit = 200,
): AsyncGenerator<{ items: T[]; cursor: string | null }> {
  let cursor = from;
  for (let page = 0; page < maxPages; page++) {
    const query = `limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const body = await api("GET", `${path}${path.includes("?") ? "&" : "?"}${query}`);
    cursor = body.nextCursor ?? null;
    yield { items: body.items as T[], cursor };
    if (cursor === null) return;
  }
}

/**
 * Items of a list endpoint read as `pagesOf` reads them. `cursor` is where to go on from, null
 * when the list was read to its end (else the list was cut: more items follow).
 */
export async function readPages<T>(
  path: string,
  maxPages = MAX_PAGES,
  from: string | null = null,
  limit = 200,
): Promise<{ items: T[]; cursor: string | null }> {
  const items: T[] = [];
  let cursor = from;
  for await (const page of pagesOf<T>(path, maxPages, from, limit)) {
    items.push(...page.items);
    cursor = page.cursor;
  }
  return { items, cursor };
}
