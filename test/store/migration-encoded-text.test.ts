import { afterEach, expect, it } from "vitest";
import { runPgMigrations } from "../../src/store/pg/pg-migrations.js";
import { createPgStore } from "../../src/store/pg/pg-store.js";
import { createTestPgDatabase, pipelinedPool, type TestPgDatabase } from "../helpers/pg-database.js";

let database: TestPgDatabase | undefined;
afterEach(async () => {
  await database?.drop();
});

it("migration 0016 keeps a PostgreSQL text value stored before it that starts with U+FFFF as it was", async () => {
  database = await createTestPgDatabase();
  const pool = pipelinedPool(database.url, 2);
  pool.on("error", () => {});
  // The database as before 0016, holding values that start with U+FFFF (and one that only holds it).
  await pool.query("DELETE FROM schema_migrations WHERE version = 16");
  const system = '\uFFFF"looks encoded"';
  const metadata = JSON.stringify({ note: "\uFFFF" });
  await pool.query(
    "INSERT INTO sessions (id, system, model, metadata, workspace, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    ["ses_mark", system, "\uFFFF", metadata, "w\uFFFF", "2026-01-01T00:00:00.000Z"],
  );
  expect(await runPgMigrations(pool)).toEqual(["0016_encoded_text.sql"]);

  const store = createPgStore(pool);
  try {
    expect(await store.sessions.get("ses_mark")).toMatchObject({
      system,
      model: "\uFFFF",
      metadata: { note: "\uFFFF" },
      workspace: "w\uFFFF",
    });
  } finally {
    await store.close();
  }
});
