import type { AgentMessage, ToolMessage } from "./messages.js";
import type { StepTrace, ToolTrace } from "./step-trace.js";
import { traceOf } from "./tool-phase.js";

/** The traces of the last assistant message's calls that already have their result, in call order. */
export function answeredTraces(history: readonly AgentMessage[]): ToolTrace[] {
  let lastAssistant = history.length - 1;
  while (lastAssistant >= 0 && history[lastAssistant]?.role !== "assistant") lastAssistant--;
  const assistant = history[lastAssistant];
  if (assistant?.role !== "assistant") return [];
  const results = new Map<string, ToolMessage>();
  for (const m of history.slice(lastAssistant + 1)) if (m.role === "tool") results.set(m.toolCallId, m);
  const traces: ToolTrace[] = [];
  for (const call of assistant.toolCalls ?? []) {
    const result = results.get(call.id);
    if (result) traces.push(traceOf(call, result));
  }
  return traces;
}

/**
 * `prior` (the stored trace of the turn of `history`'s last assistant message) with every call
 * of that message answered in `history`, when it lists fewer of them (its full trace was not
 * stored: a crash took it, or results were written after the loop had stopped); null when it
 * lists them all already, and then nothing is to be reported again.
 */
export function completedStep(prior: StepTrace, history: readonly AgentMessage[]): StepTrace | null {
  const tools = answeredTraces(history);
  return tools.length > prior.tools.length ? { ...prior, tools } : null;
}
