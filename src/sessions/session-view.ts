import type { ApprovalPolicy } from "../runs/approval-policy.js";
import type { SessionRecord } from "../store/sessions.js";

/** A session as clients see it. */
export interface SessionView {
  id: string;
  system: string | null;
  model: string | null;
  tools: string[] | null;
  approval: ApprovalPolicy | null;
  workspace: string;
  workspaceShared: boolean;
  metadata: Record<string, unknown> | null;
  createdAt: string;
  activeRunId: string | null;
}

export function sessionView(record: SessionRecord, activeRunId: string | null): SessionView {
  const { owner: _owner, workspace, ...rest } = record;
  const name = record.workspaceShared ? workspace.slice(workspace.indexOf("/") + 1) : workspace;
  return { ...rest, workspace: name, activeRunId };
}
