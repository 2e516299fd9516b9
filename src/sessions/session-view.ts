import type { SessionRecord } from "../store/sessions.js";

/** A session as clients see it: its record without the owner, and its active run. */
export type SessionView = Omit<SessionRecord, "owner"> & { activeRunId: string | null };

export function sessionView(record: SessionRecord, activeRunId: string | null): SessionView {
  const { owner, workspace, ...rest } = record;
  // A shared workspace is stored as `_shared/<owner prefix><name>`; clients know it by its name.
  const name = record.workspaceShared
    ? workspace.slice(workspace.indexOf("/") + 1 + sharedPrefix(owner).length)
    : workspace;
  return { ...rest, workspace: name, activeRunId };
}

/**
 * With API keys, shared workspace directories carry a prefix of the owner's id, so a
 * name is shared among one key's sessions and never across keys.
 */
export function sharedPrefix(owner: string | null): string {
  return owner ? `${owner.slice(0, 16)}-` : "";
}

/**
 * The longest shared workspace name a client may give: with sharedPrefix's (at most 17
 * characters) it stays within a directory name's 128 (see isValidWorkspaceName).
 */
export const MAX_SHARED_WORKSPACE_NAME = 100;
