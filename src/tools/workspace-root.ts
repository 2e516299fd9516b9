import { realpathSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { errnoCode } from "../errno.js";

/**
 * Why WORKSPACE_ROOT cannot be used when it no longer resolves to its real path at start. It
 * names no path (readiness tells it; see workspaceRootProblem).
 */
export const ROOT_MOVED_MESSAGE =
  "WORKSPACE_ROOT now resolves to another directory than at the server's start (it was moved, or a link on its path re-pointed); the server's workspaces stay where they were, so it must be restarted to use the new one";

/** Thrown by a workspace's creation, having made nothing, when the root resolves elsewhere than at start. */
export class WorkspaceRootMovedError extends Error {
  constructor() {
    super(ROOT_MOVED_MESSAGE);
    this.name = "WorkspaceRootMovedError";
  }
}

/**
 * Where the absolute `path` resolves now: its real path (one realpath), or for a missing path
 * its nearest existing ancestor's real path with the rest appended (where a recursive mkdir
 * would make it). Other errors (EACCES, ENOTDIR, ...) are thrown.
 */
export function resolvesTo(path: string): string {
  try {
    return realpathSync.native(path);
  } catch (err) {
    if (errnoCode(err) !== "ENOENT" || dirname(path) === path) throw err;
    return join(resolvesTo(dirname(path)), basename(path));
  }
}

/** Throws WorkspaceRootMovedError unless the absolute `root` resolves to `atStart`; returns `atStart`. */
export function checkRootResolvesTo(root: string, atStart: string): string {
  if (resolvesTo(root) !== atStart) throw new WorkspaceRootMovedError();
  return atStart;
}
