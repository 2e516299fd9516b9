import { afterEach, expect, it } from "vitest";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";

const drops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const drop of drops.splice(0)) await drop();
});

/**
 * close() over PostgreSQL sends the writes still waiting for their group's window before the
 * pool ends. When that group is refused as a whole (one of its writes conflicts), each of its
 * writes runs again alone and settles as it would have alone before the pool ends. Before, the
 * pool was ended at once: those runs found it ended, and a valid write made before close() was
 * never stored.
 */
it("a valid write waiting at close() is stored even when another write of its group is refused", async () => {
  const database = await createTestPgDatabase();
  drops.push(() => database.drop());
  const store = await openPgStore({ url: database.url, maxConnections: 4 });
  await seedSession(store, { id: "ses_a" });
  await store.runs.create(runRecord({ id: "run_a", sessionId: "ses_a" }), []);
  await store.commitRun("run_a", [finishChange()], []);

  // Both wait for the next group: the first is refused (run_not_live), the second is fine.
  const refused = store.commitRun("run_a", [finishChange()], []);
  const insert = seedSession(store, { id: "ses_b" });
  const closed = store.close();
  const outcomes = await Promise.allSettled([refused, insert]);
  await closed;

  const reopened = await openPgStore({ url: database.url, maxConnections: 2 });
  const stored = await reopened.sessions.get("ses_b");
  await reopened.close();
  const told = outcomes.map((o) =>
    o.status === "fulfilled" ? "stored" : ((o.reason as { rule?: string }).rule ?? String(o.reason)),
  );
  expect({ told, stored: stored?.id ?? null }).toEqual({ told: ["run_not_live", "stored"], stored: "ses_b" });
});
