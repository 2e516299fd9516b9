import { join } from "node:path";
import { workspaceRootMoved } from "../errors.js";
import type { SessionRecord, Store } from "../store/store.js";
import { createSessionWorkspace, removeSessionWorkspace } from "../tools/session-workspace.js";
import { removeSharedWorkspace } from "../tools/shared-workspace-removal.js";
import { WorkspaceRootMovedError } from "../tools/workspace-root.js";

/**
 * Removes the workspace of a session that is not stored (deleted, or its insert refused): its
 * own, or a shared one once no stored session has it. A create naming a shared workspace
 * stores its session first and makes the directory after (remakeSharedWorkspace), which
 * removeSharedWorkspace's check relies on.
 */
export function removeWorkspaceOf({
  root,
  record,
  store,
}: {
  root: string;
  record: Pick<SessionRecord, "workspace" | "workspaceShared">;
  store: Store;
}): Promise<boolean> {
  const path = join(root, record.workspace);
  if (!record.workspaceShared) return removeSessionWorkspace({ root, path, shared: false });
  return removeSharedWorkspace({
    root,
    path,
    inUse: () => store.sessions.sharedWorkspaceInUse(record.workspace),
  });
}

/**
 * Makes (again) the shared workspace of a session just stored: the delete of the last other
 * session having it may have removed it between its making before the insert (which checks the
 * name and the path) and the insert. When it cannot be made, the session is deleted (best
 * effort: nothing of it exists yet but its row) and the error thrown.
 */
export async function remakeSharedWorkspace({
  root,
  realRoot,
  sessionId,
  shared,
  store,
}: {
  root: string;
  /** See createSessionWorkspace. */
  realRoot: string;
  sessionId: string;
  shared: string;
  store: Store;
}): Promise<void> {
  try {
    await createSessionWorkspace({ root, realRoot, sessionId, shared });
  } catch (err) {
    await store.sessions.delete(sessionId).catch(() => {});
    throw err;
  }
}

/** `making`, its WorkspaceRootMovedError answered 503 WORKSPACE_ROOT_MOVED. */
export const refusingMovedRoot = <T>(making: Promise<T>): Promise<T> =>
  making.catch((err: unknown) => {
    throw err instanceof WorkspaceRootMovedError ? workspaceRootMoved(err.message) : err;
  });
