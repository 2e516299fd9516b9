import { join } from "node:path";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase } from "./pg-database.js";
import { tempDir } from "./temp-dir.js";

export type BackendName = "sqlite" | "postgres";

export interface OpenedBackend {
  store: Store;
  /** Closes the store and removes its file or database. */
  dispose(): Promise<void>;
}

/**
 * The store backends a suite runs against: a real SQLite file in a temp dir, and a real
 * PostgreSQL database copied from the suite's migrated template.
 */
export const STORE_BACKENDS: { name: BackendName; open(): Promise<OpenedBackend> }[] = [
  {
    name: "sqlite",
    async open() {
      const dir = tempDir("store-");
      const store = openSqliteStore({ path: join(dir.path, "agent.db") });
      return {
        store,
        async dispose() {
          await store.close();
          dir.cleanup();
        },
      };
    },
  },
  {
    name: "postgres",
    async open() {
      const database = await createTestPgDatabase();
      const store = await openPgStore({ url: database.url, maxConnections: 12 });
      return {
        store,
        async dispose() {
          await store.close();
          await database.drop();
        },
      };
    },
  },
];
