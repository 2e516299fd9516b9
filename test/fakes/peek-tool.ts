import { z } from "zod";
import { type AgentTool, toolOk } from "../../src/agent/tool.js";

/** A read-only tool that answers "ok" at once: a tool call that does nothing of its own. */
export const peek: AgentTool<Record<string, never>> = {
  name: "peek",
  description: "read-only probe",
  inputSchema: z.object({}).strict() as unknown as z.ZodType<Record<string, never>>,
  readOnly: true,
  execute: async () => toolOk("ok"),
};
