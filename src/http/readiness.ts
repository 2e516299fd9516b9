import type { AppContext } from "../app-context.js";

export interface Readiness {
  ready: boolean;
  checks: { database: { ok: boolean; message?: string }; model: { ok: boolean; message?: string } };
}

/** Ready when the database takes writes and a model is configured. */
export function checkReadiness(ctx: Pick<AppContext, "store" | "modelProblem">): Readiness {
  let database: Readiness["checks"]["database"] = { ok: true };
  try {
    ctx.store.probeWrites();
  } catch (err) {
    database = { ok: false, message: `the database does not take writes: ${(err as Error).message}` };
  }
  const model = ctx.modelProblem === null ? { ok: true } : { ok: false, message: ctx.modelProblem };
  return { ready: database.ok && model.ok, checks: { database, model } };
}
