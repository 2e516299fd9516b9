import type { ToolCall } from "./messages.js";
import type { AnyAgentTool, ToolOutcome } from "./tool.js";
import { invalidArgumentsOutcome, unknownToolOutcome } from "./tool-results.js";

export type ResolvedToolCall = { ok: true; tool: AnyAgentTool; input: unknown } | { ok: false; outcome: ToolOutcome };

/**
 * Law 1 and 6: the host looks the proposed tool up and validates its arguments
 * before anything else happens. Failures are results the model sees (law 5).
 */
export function resolveToolCall(call: ToolCall, tools: ReadonlyMap<string, AnyAgentTool>): ResolvedToolCall {
  const tool = tools.get(call.name);
  if (!tool) return { ok: false, outcome: unknownToolOutcome(call.name, [...tools.keys()]) };

  let raw: unknown;
  try {
    // Models send "" for a call without arguments.
    raw = call.input.trim() === "" ? {} : JSON.parse(call.input);
  } catch (err) {
    return {
      ok: false,
      outcome: invalidArgumentsOutcome(`arguments are not valid JSON (${(err as Error).message})`),
    };
  }
  const parsed = tool.inputSchema.safeParse(raw);
  if (!parsed.success) {
    const reason = parsed.error.issues
      .map((issue) => `${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`)
      .join("; ");
    return { ok: false, outcome: invalidArgumentsOutcome(reason) };
  }
  return { ok: true, tool, input: parsed.data };
}
