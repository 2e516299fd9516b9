import type { Db } from "./database.js";
import { eventStore } from "./events.js";
import { messageStore } from "./messages.js";
import { runStore } from "./runs.js";
import { sessionStore } from "./sessions.js";
import { stepStore } from "./steps.js";
import { StorageHealth } from "./storage-health.js";
import { toolCallStore } from "./tool-calls.js";

/** Every table's statements over one connection, and its transaction helper. */
export function createStore(db: Db) {
  const health = new StorageHealth();
  // One transaction wrapper, reused: building it costs as much as a small commit.
  const inTransaction = db.transaction((fn: () => unknown) => fn());
  const heartbeat = db.prepare("INSERT OR REPLACE INTO server_heartbeat (id, at) VALUES (1, ?)");
  const growth = db.prepare("INSERT INTO server_probe (data) VALUES (zeroblob(16384))");
  const ROLLBACK = Symbol("rollback");
  return {
    health,
    db,
    sessions: sessionStore(db),
    runs: runStore(db),
    messages: messageStore(db),
    events: eventStore(db),
    toolCalls: toolCallStore(db),
    steps: stepStore(db),
    /**
     * Proves the database takes writes: rewrites the heartbeat row and, in a savepoint
     * rolled back at once, allocates new pages (a full disk or database fails here). It
     * is a transaction like any other: a success clears a recorded failure. Throws on failure.
     */
    probeWrites(): void {
      this.transaction(() => {
        heartbeat.run(new Date().toISOString());
        try {
          db.transaction(() => {
            growth.run();
            throw ROLLBACK;
          })();
        } catch (err) {
          if (err !== ROLLBACK) throw err;
        }
      });
    },
    /** Runs `fn` in one transaction: all of it is written, or none. Never pass an async function. */
    transaction<T>(fn: () => T): T {
      try {
        const result = inTransaction(fn) as T;
        health.recordSuccess();
        return result;
      } catch (err) {
        if (
          typeof (err as { code?: unknown }).code === "string" &&
          (err as { code: string }).code.startsWith("SQLITE_")
        ) {
          health.recordFailure(err);
        }
        throw err;
      }
    },
  };
}

export type Store = ReturnType<typeof createStore>;
