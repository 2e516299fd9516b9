import type { Db } from "./database.js";
import { eventStore } from "./events.js";
import { keyedRunStore } from "./keyed-run.js";
import { leaseStore } from "./leases.js";
import { messageStore } from "./messages.js";
import { queueStore } from "./queue.js";
import { runListStore } from "./run-lists.js";
import { runStore } from "./runs.js";
import { sessionStore } from "./sessions.js";
import { stepStore } from "./steps.js";
import { toolCallStore } from "./tool-calls.js";
import { webhookStore } from "./webhooks.js";

/** The SQLite store's tables over `db`, each with its statements prepared (once, here). */
export function sqliteTables(db: Db) {
  return {
    sessions: sessionStore(db),
    runs: runStore(db),
    runInputs: keyedRunStore(db),
    messages: messageStore(db),
    events: eventStore(db),
    toolCalls: toolCallStore(db),
    steps: stepStore(db),
    runLists: runListStore(db),
    webhooks: webhookStore(db),
    leases: leaseStore(db),
    queue: queueStore(db),
  };
}
