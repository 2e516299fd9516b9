import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { resolve } from "node:path";
import type { AppContext } from "../app-context.js";

interface Check {
  ok: boolean;
  message?: string;
}

export interface Readiness {
  ready: boolean;
  checks: { database: Check; workspaces: Check; model: Check };
}

/**
 * Ready when the database takes writes, the workspace root is a directory this process can
 * write (made again when it was removed, as creating a session would) and a model is configured.
 */
export function checkReadiness(ctx: Pick<AppContext, "store" | "modelProblem" | "config">): Readiness {
  let database: Check = { ok: true };
  try {
    ctx.store.probeWrites();
  } catch (err) {
    database = { ok: false, message: `the database does not take writes: ${(err as Error).message}` };
  }
  const model = ctx.modelProblem === null ? { ok: true } : { ok: false, message: ctx.modelProblem };
  const workspaces = checkWorkspaceRoot(ctx.config.WORKSPACE_ROOT);
  return { ready: database.ok && workspaces.ok && model.ok, checks: { database, workspaces, model } };
}

function checkWorkspaceRoot(root: string): Check {
  const path = resolve(root);
  try {
    mkdirSync(path, { recursive: true });
    if (!statSync(path).isDirectory()) return { ok: false, message: `WORKSPACE_ROOT ${path} is not a directory` };
    accessSync(path, constants.W_OK | constants.X_OK);
    return { ok: true };
  } catch (err) {
    return { ok: false, message: `WORKSPACE_ROOT ${path} cannot hold workspaces: ${(err as Error).message}` };
  }
}
