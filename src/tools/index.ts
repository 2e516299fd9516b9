import { z } from "zod";
import type { AnyAgentTool } from "../agent/tool.js";
import { defaultApprovalMode } from "../domain/approval-policy.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { editFileTool } from "./edit-file.js";
import { listFilesTool } from "./list-files.js";
import { readFileTool } from "./read-file.js";
import type { ShellSandbox } from "./sandbox.js";
import { searchFilesTool } from "./search-files.js";
import { createShellTool, shellTool } from "./shell.js";
import { writeFileTool } from "./write-file.js";

export type { WorkspaceToolContext, WorkspaceToolDefinition } from "./definition.js";
export { ToolErrorCode } from "./error-codes.js";
export { resolveShellSandbox, type ShellSandbox, type ShellSandboxMode, UNSANDBOXED } from "./sandbox.js";
export {
  createSessionWorkspace,
  InvalidWorkspaceNameError,
  isValidWorkspaceName,
  locateInWorkspace,
  removeSessionWorkspace,
  type SessionWorkspace,
} from "./workspace.js";

const FILE_TOOLS: WorkspaceToolDefinition[] = [
  listFilesTool,
  readFileTool,
  searchFilesTool,
  writeFileTool,
  editFileTool,
];

/**
 * The workspace tools a server offers, in the order they are presented to the model: the
 * file tools and `shell`, and with a sandbox also `shell_readonly` (a read-only shell is
 * only read-only when a mount enforces it, so without one it is not offered).
 */
export function workspaceToolsFor(sandbox: ShellSandbox): WorkspaceToolDefinition[] {
  if (sandbox.kind === "none") return [...FILE_TOOLS, createShellTool({ sandbox })];
  return [...FILE_TOOLS, createShellTool({ sandbox }), createShellTool({ sandbox, readOnly: true })];
}

/** The tools of a server without a shell sandbox. */
export const workspaceTools: WorkspaceToolDefinition[] = [...FILE_TOOLS, shellTool];

/** Every name a session may list in `tools` (`shell_readonly` is bound only where it is offered). */
export const WORKSPACE_TOOL_NAMES: readonly string[] = [...workspaceTools.map((tool) => tool.name), "shell_readonly"];

export type DefaultApproval = "allow" | "ask";

/**
 * The approval a tool needs when neither session nor run says otherwise: read-only tools
 * (the file readers, and `shell_readonly` where it is offered) run without asking, the others
 * (write_file, edit_file, shell) ask. An unknown name asks (fail closed).
 */
export function defaultApprovalPolicy(
  name: string,
  tools: WorkspaceToolDefinition[] = workspaceTools,
): DefaultApproval {
  return defaultApprovalMode(tools.find((tool) => tool.name === name)?.readOnly ?? false);
}

/**
 * The workspace tools as the loop's AgentTools, each confined to `workspace`, the real path
 * of the session's workspace directory; with `names`, only those (in the registry's order;
 * a known name this server does not offer is left out). `tools` defaults to the unsandboxed
 * set. Throws on a name that is not a workspace tool: callers validate user input against
 * WORKSPACE_TOOL_NAMES first.
 */
export function bindWorkspaceTools({
  workspace,
  names,
  tools = workspaceTools,
}: {
  workspace: string;
  names?: readonly string[];
  tools?: WorkspaceToolDefinition[];
}): AnyAgentTool[] {
  const unknown = names?.filter((name) => !WORKSPACE_TOOL_NAMES.includes(name)) ?? [];
  if (unknown.length > 0) {
    throw new Error(`unknown workspace tool(s): ${unknown.join(", ")}; known: ${WORKSPACE_TOOL_NAMES.join(", ")}`);
  }
  const selected = names ? tools.filter((tool) => names.includes(tool.name)) : tools;
  return selected.map((tool) => bindTool(tool, workspace));
}

/**
 * Binds the tool to the workspace. Each workspace tool checks itself that the workspace is
 * still in place, in the same descriptor it then works through (see openWorkspaceRoot and
 * locateInWorkspace), and refuses with WORKSPACE_UNAVAILABLE when it is not.
 */
function bindTool(tool: WorkspaceToolDefinition, workspace: string): AnyAgentTool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    readOnly: tool.readOnly,
    execute: (input, { toolCallId, signal }) => tool.execute(input, { workspace, signal, toolCallId }),
  };
}

export interface WorkspaceToolDescription {
  name: string;
  description: string;
  /** JSON Schema (draft 2020-12) of the input the model sends. */
  inputSchema: Record<string, unknown>;
  readOnly: boolean;
  defaultApproval: DefaultApproval;
  /** Shell tools only: `bwrap` when commands run in the sandbox, `none` when with the server's rights. */
  sandbox?: "bwrap" | "none";
}

const SHELL_TOOL_NAMES: ReadonlySet<string> = new Set(["shell", "shell_readonly"]);

/** The tools as `GET /tools` shows them: JSON Schemas of their inputs, default approval, the shell's sandbox. */
export function describeWorkspaceTools(sandbox: ShellSandbox): WorkspaceToolDescription[] {
  const tools = workspaceToolsFor(sandbox);
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.inputSchema, { io: "input" }) as Record<string, unknown>,
    readOnly: tool.readOnly,
    defaultApproval: defaultApprovalPolicy(tool.name, tools),
    ...(SHELL_TOOL_NAMES.has(tool.name) ? { sandbox: sandbox.kind } : {}),
  }));
}
