import type { AgentTool, ToolExecutionContext, ToolOutcome } from "../agent/tool.js";

/** What a workspace tool's `execute` receives besides its input: the loop's context and the workspace. */
export interface WorkspaceToolContext extends ToolExecutionContext {
  /** The session's workspace directory; every path the tool touches must resolve inside it. */
  workspace: string;
}

/**
 * A tool defined independently of any workspace; `bindWorkspaceTools` turns it into the
 * loop's `AgentTool` (same name, description, schema and read-only flag). `execute`
 * receives input already parsed by `inputSchema` and returns failures as values; it
 * throws only for broken invariants. Descriptions are written for the model.
 */
export interface WorkspaceToolDefinition<I = unknown> extends Omit<AgentTool<I>, "execute"> {
  execute(input: I, ctx: WorkspaceToolContext): Promise<ToolOutcome>;
}
