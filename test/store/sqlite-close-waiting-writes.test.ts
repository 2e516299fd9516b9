import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openDatabase } from "../../src/store/database.js";
import { StorageError } from "../../src/store/errors.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

const dirs: { cleanup(): void }[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.cleanup();
});

/** A SQLite store over a new file, and how to open that file again. */
function sqliteFile() {
  const dir = tempDir("sqlite-close-");
  dirs.push(dir);
  const path = join(dir.path, "agent.db");
  return { store: createSqliteStore(openDatabase({ path })), reopen: () => createSqliteStore(openDatabase({ path })) };
}

/** How a write settled: "stored", its conflict's rule, or its StorageError's kind. */
const told = (outcome: PromiseSettledResult<unknown>) => {
  if (outcome.status === "fulfilled") return "stored";
  const err = outcome.reason as { rule?: string };
  if (err.rule) return err.rule;
  return err instanceof StorageError ? `storage: ${err.kind}` : `raw: ${String(err)}`;
};

/**
 * close() sends the writes still waiting before it closes the file. When that last group is
 * refused as a whole (one of its writes conflicts), each of its writes runs again alone and
 * settles as it would have alone, before the file is closed. Before, those runs happened after
 * close() had closed the connection: a valid write made before close() was never stored, and
 * both writes were rejected with a raw TypeError ("The database connection is not open"). A
 * write made once the store is closed is refused StorageError `unavailable`.
 */
it("a valid write waiting at close() is stored even when another write of its group is refused", async () => {
  const { store, reopen } = sqliteFile();
  await seedSession(store, { id: "ses_a" });
  await store.runs.create(runRecord({ id: "run_a", sessionId: "ses_a" }), []);
  await store.commitRun("run_a", [finishChange()], []);

  // Both wait for the next group: the first is refused (run_not_live), the second is fine.
  const refused = store.commitRun("run_a", [finishChange()], []);
  const insert = seedSession(store, { id: "ses_b" });
  const closed = store.close();
  const outcomes = await Promise.allSettled([refused, insert]);
  await closed;
  const after = await Promise.allSettled([seedSession(store, { id: "ses_c" })]);

  const reopened = reopen();
  const stored = [await reopened.sessions.get("ses_b"), await reopened.sessions.get("ses_c")];
  await reopened.close();
  expect({ outcomes: [...outcomes, ...after].map(told), stored: stored.map((s) => s?.id ?? null) }).toEqual({
    outcomes: ["run_not_live", "stored", "storage: unavailable"],
    stored: ["ses_b", null],
  });
});
