import { z } from "zod";
import type { AnyAgentTool } from "../agent/tool.js";
import { defaultApprovalMode } from "../domain/approval-policy.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { editFileTool } from "./edit-file.js";
import { listFilesTool } from "./list-files.js";
import { readFileTool } from "./read-file.js";
import { searchFilesTool } from "./search-files.js";
import { shellTool } from "./shell.js";
import { isWorkspaceInPlace, workspaceMovedOutcome } from "./workspace.js";
import { writeFileTool } from "./write-file.js";

export type { WorkspaceToolContext, WorkspaceToolDefinition } from "./definition.js";
export { ToolErrorCode } from "./error-codes.js";
export {
  createSessionWorkspace,
  InvalidWorkspaceNameError,
  isValidWorkspaceName,
  locateInWorkspace,
  removeSessionWorkspace,
  type SessionWorkspace,
} from "./workspace.js";

/** Every workspace tool, in the order they are presented to the model. */
export const workspaceTools: WorkspaceToolDefinition[] = [
  listFilesTool,
  readFileTool,
  searchFilesTool,
  writeFileTool,
  editFileTool,
  shellTool,
];

export const WORKSPACE_TOOL_NAMES: readonly string[] = workspaceTools.map((tool) => tool.name);

export type DefaultApproval = "allow" | "ask";

/**
 * The approval a tool needs when neither session nor run says otherwise: read-only tools
 * run without asking, the others (write_file, edit_file, shell) ask. An unknown name asks
 * (fail closed).
 */
export function defaultApprovalPolicy(name: string): DefaultApproval {
  return defaultApprovalMode(workspaceTools.find((tool) => tool.name === name)?.readOnly ?? false);
}

/**
 * The workspace tools as the loop's AgentTools, each confined to `workspace`, the real path
 * of the session's workspace directory; with `names`, only those (in the registry's order).
 * Throws on a name that is not a workspace tool: callers validate user input against
 * WORKSPACE_TOOL_NAMES first.
 */
export function bindWorkspaceTools({
  workspace,
  names,
}: {
  workspace: string;
  names?: readonly string[];
}): AnyAgentTool[] {
  const unknown = names?.filter((name) => !WORKSPACE_TOOL_NAMES.includes(name)) ?? [];
  if (unknown.length > 0) {
    throw new Error(`unknown workspace tool(s): ${unknown.join(", ")}; known: ${WORKSPACE_TOOL_NAMES.join(", ")}`);
  }
  const selected = names ? workspaceTools.filter((tool) => names.includes(tool.name)) : workspaceTools;
  return selected.map((tool) => bindTool(tool, workspace));
}

/** Runs the tool only while its workspace is still in place (see isWorkspaceInPlace). */
function bindTool(tool: WorkspaceToolDefinition, workspace: string): AnyAgentTool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    readOnly: tool.readOnly,
    execute: async (input, { toolCallId, signal }) => {
      if (!(await isWorkspaceInPlace(workspace))) return workspaceMovedOutcome();
      return tool.execute(input, { workspace, signal, toolCallId });
    },
  };
}

export interface WorkspaceToolDescription {
  name: string;
  description: string;
  /** JSON Schema (draft 2020-12) of the input the model sends. */
  inputSchema: Record<string, unknown>;
  readOnly: boolean;
  defaultApproval: DefaultApproval;
}

/** The tools as `GET /tools` shows them: JSON Schemas of their inputs and default approval. */
export function describeWorkspaceTools(): WorkspaceToolDescription[] {
  return workspaceTools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.inputSchema, { io: "input" }) as Record<string, unknown>,
    readOnly: tool.readOnly,
    defaultApproval: defaultApprovalPolicy(tool.name),
  }));
}
