import type { AppContext } from "../app-context.js";

export interface Readiness {
  ready: boolean;
  checks: { database: { ok: boolean; message?: string }; model: { ok: boolean; message?: string } };
}

/** Ready when the database takes a write and a model is configured. */
export function checkReadiness(ctx: Pick<AppContext, "store" | "modelProblem">): Readiness {
  let database: Readiness["checks"]["database"] = { ok: true };
  try {
    ctx.store.db
      .prepare("INSERT OR REPLACE INTO server_heartbeat (id, at) VALUES (1, ?)")
      .run(new Date().toISOString());
  } catch (err) {
    database = { ok: false, message: `the database does not take writes: ${(err as Error).message}` };
  }
  const failure = ctx.store.health.failure;
  if (database.ok && failure) {
    database = { ok: false, message: `the last write failed and none has succeeded since: ${failure.message}` };
  }
  const model = ctx.modelProblem === null ? { ok: true } : { ok: false, message: ctx.modelProblem };
  return { ready: database.ok && model.ok, checks: { database, model } };
}
