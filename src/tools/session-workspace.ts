import { mkdirSync } from "node:fs";
import { mkdir, realpath } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { isInside } from "./paths.js";
import { removeTree } from "./tree-removal.js";
import { checkRootResolvesTo, resolvesTo } from "./workspace-root.js";

/**
 * Shared workspaces live in their own directory under the root, so a shared name can never
 * coincide with (and so hand out, or delete) another session's private workspace. The
 * leading underscore makes it an invalid session id.
 */
export const SHARED_WORKSPACES_DIR = "_shared";

/** A single safe path segment: starts with a letter or digit (so never `.` or `..`), no slashes. */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Whether `name` may be used as a shared workspace name (and as a session directory name). */
export function isValidWorkspaceName(name: string): boolean {
  return SEGMENT.test(name);
}

export class InvalidWorkspaceNameError extends Error {
  constructor(kind: "session id" | "shared workspace name", name: string) {
    super(
      `invalid ${kind} ${JSON.stringify(name)}: use 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit`,
    );
    this.name = "InvalidWorkspaceNameError";
  }
}

export interface SessionWorkspace {
  /** Absolute path of the workspace directory. */
  path: string;
  /**
   * A shared workspace outlives each of its sessions: `removeSessionWorkspace` never deletes it,
   * `removeSharedWorkspace` does once no session has it.
   */
  shared: boolean;
}

/**
 * Creates (or reuses, when it already exists) a session's workspace: `<root>/<sessionId>`, or
 * `<root>/_shared/<shared>` when a shared name is given (made again when it is missing); a
 * root that is missing is made again too. `realRoot` is the root's real path at the server's
 * start (the tools are pinned to it): when `root` now resolves elsewhere, throws
 * WorkspaceRootMovedError, having made nothing; without it, the root's real path now is used.
 * Throws InvalidWorkspaceNameError for an unsafe session id or shared name (validate user input
 * first with isValidWorkspaceName), and throws if the directory turns out to resolve outside
 * the root (e.g. a planted symlink).
 */
export async function createSessionWorkspace({
  root,
  realRoot: atStart,
  sessionId,
  shared,
}: {
  root: string;
  realRoot?: string;
  sessionId: string;
  shared?: string;
}): Promise<SessionWorkspace> {
  if (!isValidWorkspaceName(sessionId)) throw new InvalidWorkspaceNameError("session id", sessionId);
  if (shared !== undefined && !isValidWorkspaceName(shared)) {
    throw new InvalidWorkspaceNameError("shared workspace name", shared);
  }
  const rootAbs = resolve(root);
  // One realpath: where the root resolves now (where it would be made, when missing).
  const realRoot = atStart === undefined ? resolvesTo(rootAbs) : checkRootResolvesTo(rootAbs, atStart);
  if (shared === undefined) {
    // A new directory made by a non-recursive mkdir directly in the root's real path is
    // inside the root by construction (mkdir does not follow a link in its last step). The
    // mkdir is synchronous, as the tools' metadata calls are (see open-dir.ts): the kernel's
    // work is the same either way (20-125 us on a local disk), and the thread pool's round
    // trip would add ~70 us of CPU.
    const makeDir = (): boolean => {
      try {
        mkdirSync(join(realRoot, sessionId));
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        return false;
      }
    };
    let created: boolean;
    try {
      created = makeDir();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      // The root is missing: made again where it resolved.
      mkdirSync(realRoot, { recursive: true });
      created = makeDir();
    }
    const path = join(rootAbs, sessionId);
    // An existing entry (a reused or planted one) and a root reached through a link are checked.
    if (!created || realRoot !== rootAbs) {
      const realPath = await realpath(path);
      if (!isInside(realRoot, realPath))
        throw new Error(`workspace directory ${path} resolves outside the workspace root`);
    }
    return { path, shared: false };
  }
  const path = join(rootAbs, SHARED_WORKSPACES_DIR, shared);
  await mkdir(join(realRoot, SHARED_WORKSPACES_DIR, shared), { recursive: true });
  const realPath = await realpath(path);
  if (!isInside(realRoot, realPath) || realRoot === realPath) {
    throw new Error(`workspace directory ${path} resolves outside the workspace root`);
  }
  return { path, shared: true };
}

/**
 * Deletes a session's own workspace with everything in it, however deep and whatever its
 * modes (see removeTree: symlinks inside are removed, never followed); false when there is
 * none. A shared workspace is left alone (returns false; see removeSharedWorkspace). Throws,
 * deleting nothing, when `path` is not a session directory directly under `root`: that is a
 * bug in the caller, and deleting anything else could destroy data.
 */
export async function removeSessionWorkspace({
  root,
  path,
  shared,
}: {
  root: string;
  path: string;
  shared: boolean;
}): Promise<boolean> {
  if (shared) return false;
  const rootAbs = resolve(root);
  const target = resolve(path);
  const name = basename(target);
  if (dirname(target) !== rootAbs || !isValidWorkspaceName(name)) {
    throw new Error(`refusing to remove ${path}: not a session workspace directly under ${root}`);
  }
  // Whatever its depth and modes; a symlink at `target` or inside it is removed, never followed.
  return removeTree({ parent: rootAbs, name });
}
