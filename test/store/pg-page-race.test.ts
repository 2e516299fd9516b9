/**
 * A PostgreSQL page reads its rows' sizes and then its rows, in two statements: a session
 * created between the two comes before the counted ones (newest first) and pushes the last of
 * them out of the page, which then says there is a next page, where that one is.
 */
import pg from "pg";
import { afterEach, beforeEach, expect, it } from "vitest";
import { pgPages } from "../../src/store/pg/pg-pages.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { seedSession } from "../helpers/seed.js";

let database: TestPgDatabase;
let store: Store;
let pool: pg.Pool;
beforeEach(async () => {
  database = await createTestPgDatabase();
  store = await openPgStore({ url: database.url, maxConnections: 4 });
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
});
afterEach(async () => {
  await pool.end();
  await store.close();
  await database.drop();
});

it("a session created between a page's two reads: following the cursors still gives every session once", async () => {
  for (let i = 1; i <= 3; i++) await seedSession(store, { id: `ses_0${i}`, owner: "o" });
  let reads = 0;
  const pages = pgPages(async (text, values) => {
    // Between the sizes and the rows of the first page, another request creates a session.
    if (++reads === 2) await seedSession(store, { id: "ses_09", owner: "o" });
    return (await pool.query(text, values)).rows;
  });
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await pages.sessions({ owner: "o", limit: 10, cursor });
    seen.push(...page.items.map((s) => s.id));
    cursor = page.nextCursor;
  } while (cursor !== null);
  expect(seen).toEqual(["ses_09", "ses_03", "ses_02", "ses_01"]);
});
