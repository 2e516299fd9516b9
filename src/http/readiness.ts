import { resolve } from "node:path";
import type { AppContext } from "../app-context.js";
import { workspaceRootProblem } from "../startup-checks.js";
import { checkRootResolvesTo, WorkspaceRootMovedError } from "../tools/workspace-root.js";
import { boundedProbe } from "./bounded-probe.js";

interface Check {
  ok: boolean;
  message?: string;
}

export interface Readiness {
  ready: boolean;
  checks: { accepting: Check; database: Check; workspaces: Check; model: Check };
  /** Where shell commands run (informational: an unsandboxed shell does not make the server unready). */
  shell: { sandbox: "bwrap" | "none"; network: boolean; reason?: string };
}

/**
 * Ready when the server is not shutting down, the database takes writes (answering within
 * PROBE_DEADLINE_MS: a database that hangs is reported as such, promptly), the workspace root
 * still resolves to its real path at start and is a directory this process can write (made
 * again when it was removed, as creating a session would) and a model is configured.
 */
export async function checkReadiness(
  ctx: Pick<AppContext, "store" | "modelProblem" | "config" | "manager" | "shellSandbox" | "workspaceRealRoot">,
): Promise<Readiness> {
  // From SIGTERM on, load balancers should send new work elsewhere.
  const accepting = ctx.manager.accepting ? { ok: true } : { ok: false, message: "the server is shutting down" };
  let database: Check = { ok: true };
  try {
    await boundedProbe(ctx.store);
  } catch (err) {
    database = { ok: false, message: `the database does not take writes: ${(err as Error).message}` };
  }
  const fileProblem = ctx.store.fileProblem?.() ?? null;
  if (database.ok && fileProblem) database = { ok: false, message: fileProblem };
  const model = ctx.modelProblem === null ? { ok: true } : { ok: false, message: ctx.modelProblem };
  const workspaces = workspacesCheck(ctx.config.WORKSPACE_ROOT, ctx.workspaceRealRoot);
  return {
    ready: accepting.ok && database.ok && workspaces.ok && model.ok,
    checks: { accepting, database, workspaces, model },
    shell: shellReport(ctx.shellSandbox),
  };
}

/** The workspaces check: a root that resolves elsewhere than at start fails it as creating a session does. */
function workspacesCheck(root: string, realRoot: string): Check {
  try {
    checkRootResolvesTo(resolve(root), realRoot);
  } catch (err) {
    if (err instanceof WorkspaceRootMovedError) return { ok: false, message: err.message };
    // Any other failure to resolve it is workspaceRootProblem's to name.
  }
  const problem = workspaceRootProblem(root);
  return problem ? { ok: false, message: `WORKSPACE_ROOT cannot hold workspaces (${problem})` } : { ok: true };
}

/** What /readyz tells a caller without credentials: ready or not, and which check failed. */
export interface ReadinessSummary {
  ready: boolean;
  checks: Record<keyof Readiness["checks"], { ok: boolean }>;
}

/**
 * `readiness` without its messages and `shell`: what an open route may tell anyone who reaches
 * the port (a check's message may name a file's path or carry a database's error text, and
 * `shell` says whether commands run unsandboxed). A caller with a valid key gets the whole
 * answer (see routes/health.ts).
 */
export function summaryOf(readiness: Readiness): ReadinessSummary {
  const { accepting, database, workspaces, model } = readiness.checks;
  return {
    ready: readiness.ready,
    checks: {
      accepting: { ok: accepting.ok },
      database: { ok: database.ok },
      workspaces: { ok: workspaces.ok },
      model: { ok: model.ok },
    },
  };
}

const shellReport = (sandbox: AppContext["shellSandbox"]): Readiness["shell"] =>
  sandbox.kind === "bwrap"
    ? { sandbox: "bwrap", network: sandbox.network }
    : { sandbox: "none", network: true, reason: sandbox.reason };
