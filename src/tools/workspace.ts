import { lstat, readlink, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { type ToolOutcome, toolError } from "../agent/tool.js";
import { ToolErrorCode } from "./error-codes.js";
import { errnoCode, fsErrorOutcome } from "./fs-errors.js";
import { isInside } from "./paths.js";

export { isInside, workspaceRelative } from "./paths.js";

export {
  createSessionWorkspace,
  InvalidWorkspaceNameError,
  isValidWorkspaceName,
  removeSessionWorkspace,
  type SessionWorkspace,
  SHARED_WORKSPACES_DIR,
} from "./session-workspace.js";

export type ResolvedPath =
  /** `path` is the real (symlink-free) absolute path; `root` is the workspace's real path. */
  { ok: true; path: string; root: string } | { ok: false; outcome: ToolOutcome };

/** Same bound as the kernel's: more hops than this through dangling links is treated as a loop. */
const MAX_SYMLINK_HOPS = 40;

class SymlinkLoop extends Error {}

/**
 * The real path of `p`, which need not exist: for a missing path, the real path of its
 * nearest existing ancestor joined with the missing rest. A dangling symlink is followed
 * by hand (so a new file "under" it is located where the kernel would create it).
 * Reads only (realpath/lstat/readlink); creates nothing.
 */
async function realpathAllowingMissing(p: string, hops: number): Promise<string> {
  try {
    return await realpath(p);
  } catch (err) {
    if (errnoCode(err) !== "ENOENT") throw err;
  }
  const parent = dirname(p);
  if (parent === p) return p;
  let linkTarget: string | null = null;
  try {
    const stat = await lstat(p);
    if (stat.isSymbolicLink()) linkTarget = await readlink(p);
  } catch (err) {
    if (errnoCode(err) !== "ENOENT") throw err;
  }
  if (linkTarget !== null) {
    if (hops >= MAX_SYMLINK_HOPS) throw new SymlinkLoop();
    // The link exists, so its parent does: resolve the target against the parent's real path.
    return realpathAllowingMissing(resolve(await realpath(parent), linkTarget), hops + 1);
  }
  return join(await realpathAllowingMissing(parent, hops), basename(p));
}

/**
 * Whether `workspace` (a session workspace's real path, as bound to its tools) is still that
 * directory: it exists and is not reached through a symlink. A command run by the shell tool
 * can replace the directory with a symlink to anywhere (another session's workspace too); the
 * tools then refuse to run instead of following it.
 */
export async function isWorkspaceInPlace(workspace: string): Promise<boolean> {
  try {
    return (await realpath(workspace)) === workspace;
  } catch {
    return false;
  }
}

export const workspaceMovedOutcome = (): ToolOutcome =>
  toolError(
    ToolErrorCode.workspaceUnavailable,
    "the session's workspace directory is missing or was replaced (e.g. by a symlink); no tool runs in it",
    false,
  );

/**
 * Resolves a path given by the model (relative to the workspace, or absolute) to a real
 * absolute path inside the workspace, following `..` and symlinks as the kernel would.
 * Anything landing outside the workspace's real path is refused with
 * PATH_OUTSIDE_WORKSPACE; the refusal never names where the path led. Touches nothing.
 */
export async function resolveInWorkspace(workspaceRoot: string, relPath: string): Promise<ResolvedPath> {
  // `workspaceRoot` is the workspace's real path (see isWorkspaceInPlace).
  const display = relPath === "" ? "." : relPath;
  if (relPath.includes("\0")) {
    return { ok: false, outcome: toolError(ToolErrorCode.invalidPath, "the path contains a NUL byte", true) };
  }
  // The workspace is confined by its own (pinned) real path, never re-resolved: a workspace
  // directory replaced by a symlink, or a path through one, then resolves elsewhere and is refused.
  const root = workspaceRoot;
  if (!(await isWorkspaceInPlace(root))) return { ok: false, outcome: workspaceMovedOutcome() };
  const lexical = isAbsolute(relPath) ? resolve(relPath) : resolve(root, relPath);
  let real: string;
  try {
    real = await realpathAllowingMissing(lexical, 0);
  } catch (err) {
    if (err instanceof SymlinkLoop) return { ok: false, outcome: fsErrorOutcome({ code: "ELOOP" }, display) };
    return { ok: false, outcome: fsErrorOutcome(err, display) };
  }
  if (!isInside(root, real)) {
    return {
      ok: false,
      outcome: toolError(
        ToolErrorCode.pathOutsideWorkspace,
        `"${display}" resolves outside the workspace; use a path inside it (relative paths are resolved from the workspace root)`,
        true,
      ),
    };
  }
  return { ok: true, path: real, root };
}
