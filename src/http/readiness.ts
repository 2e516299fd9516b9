import type { AppContext } from "../app-context.js";
import type { Store } from "../store/store.js";

export interface Readiness {
  ready: boolean;
  checks: { database: { ok: boolean; message?: string }; model: { ok: boolean; message?: string } };
}

const ROLLBACK = Symbol("rollback");

/**
 * Whether the database takes writes: one transaction rewrites the heartbeat row and,
 * in a savepoint rolled back at once, allocates new pages (a full disk or database
 * fails here). It goes through the store's transaction, so a success also clears the
 * failure a run's write left, and a failure is recorded like any other.
 */
function probeDatabase(store: Store): Readiness["checks"]["database"] {
  try {
    store.transaction(() => {
      store.db.prepare("INSERT OR REPLACE INTO server_heartbeat (id, at) VALUES (1, ?)").run(new Date().toISOString());
      try {
        store.db.transaction(() => {
          store.db.prepare("INSERT INTO server_probe (data) VALUES (zeroblob(16384))").run();
          throw ROLLBACK;
        })();
      } catch (err) {
        if (err !== ROLLBACK) throw err;
      }
    });
    return { ok: true };
  } catch (err) {
    return { ok: false, message: `the database does not take writes: ${(err as Error).message}` };
  }
}

/** Ready when the database takes writes and a model is configured. */
export function checkReadiness(ctx: Pick<AppContext, "store" | "modelProblem">): Readiness {
  const database = probeDatabase(ctx.store);
  const model = ctx.modelProblem === null ? { ok: true } : { ok: false, message: ctx.modelProblem };
  return { ready: database.ok && model.ok, checks: { database, model } };
}
