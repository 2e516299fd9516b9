import type { SessionRecord } from "../store/sessions.js";

/** A session as clients see it: its record without the owner, and its active run. */
export type SessionView = Omit<SessionRecord, "owner"> & { activeRunId: string | null };

export function sessionView(record: SessionRecord, activeRunId: string | null): SessionView {
  const { owner: _owner, workspace, ...rest } = record;
  // A shared workspace is stored as `_shared/<name>`; clients know it by its name.
  const name = record.workspaceShared ? workspace.slice(workspace.indexOf("/") + 1) : workspace;
  return { ...rest, workspace: name, activeRunId };
}
