import type { z } from "zod";
import type { ToolOutcome } from "../agent/tool.js";

/** What a workspace tool's `execute` receives besides its input. */
export interface WorkspaceToolContext {
  /** The session's workspace directory; every path the tool touches must resolve inside it. */
  workspace: string;
  /** Fires when the run is cancelled; a long-running tool stops and reports it. */
  signal: AbortSignal;
  toolCallId: string;
}

/**
 * A tool defined independently of any workspace; `bindWorkspaceTools` turns it into the
 * loop's `AgentTool`. `execute` receives input already parsed by `inputSchema` and
 * returns failures as values; it throws only for broken invariants.
 */
export interface WorkspaceToolDefinition<I = unknown> {
  name: string;
  /** Written for the model: what the tool does, its limits, and how to use its output. */
  description: string;
  inputSchema: z.ZodType<I>;
  /** Read-only tools are allowed without asking by default. */
  readOnly: boolean;
  execute(input: I, ctx: WorkspaceToolContext): Promise<ToolOutcome>;
}
