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
  return {
    health,
    db,
    sessions: sessionStore(db),
    runs: runStore(db),
    messages: messageStore(db),
    events: eventStore(db),
    toolCalls: toolCallStore(db),
    steps: stepStore(db),
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
