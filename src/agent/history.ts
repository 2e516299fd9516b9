import type { AgentMessage, ToolCall } from "./messages.js";

export class InvalidHistoryError extends Error {
  readonly code = "INVALID_HISTORY";
  constructor(
    message: string,
    readonly ids: string[],
  ) {
    super(message);
    this.name = "InvalidHistoryError";
  }
}

/**
 * The tool calls of the last assistant message that have no result yet. Only a
 * history being resumed may end with such calls; the loop executes them first.
 */
export function pendingToolCalls(history: readonly AgentMessage[]): ToolCall[] {
  let lastAssistant = -1;
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i]?.role === "assistant") {
      lastAssistant = i;
      break;
    }
  }
  if (lastAssistant < 0) return [];
  const assistant = history[lastAssistant];
  if (assistant?.role !== "assistant" || !assistant.toolCalls?.length) return [];
  const answered = new Set<string>();
  for (const m of history.slice(lastAssistant + 1)) if (m.role === "tool") answered.add(m.toolCallId);
  return assistant.toolCalls.filter((c) => !answered.has(c.id));
}

/**
 * Whether the history ends in the model's final reply (an assistant message without tool calls)
 * at index `from` or later: a run resumed with such a history is done (law 2).
 */
export function endsInFinalReply(history: readonly AgentMessage[], from: number): boolean {
  const last = history.length - 1;
  const message = history[last];
  return last >= from && message?.role === "assistant" && !message.toolCalls?.length;
}

/**
 * Law 4: every tool call has exactly one result, right after its assistant message,
 * and every result answers a call. Throws `InvalidHistoryError` naming the ids.
 * With `allowPendingTail`, the last assistant's calls may still lack results.
 */
export function assertValidHistory(
  history: readonly AgentMessage[],
  { allowPendingTail = false }: { allowPendingTail?: boolean } = {},
): void {
  const missing: string[] = [];
  const orphans: string[] = [];
  const duplicates: string[] = [];
  let open = new Map<string, boolean>();
  const close = (isTail: boolean) => {
    for (const [id, answered] of open) if (!answered && !(isTail && allowPendingTail)) missing.push(id);
  };
  for (const m of history) {
    if (m.role === "tool") {
      const answered = open.get(m.toolCallId);
      if (answered === undefined) orphans.push(m.toolCallId);
      else if (answered) duplicates.push(m.toolCallId);
      else open.set(m.toolCallId, true);
      continue;
    }
    close(false);
    open = new Map((m.role === "assistant" ? (m.toolCalls ?? []) : []).map((c) => [c.id, false]));
  }
  close(true);
  const problems: string[] = [];
  if (missing.length) problems.push(`tool calls without a result: ${missing.join(", ")}`);
  if (orphans.length) problems.push(`tool results without a call: ${orphans.join(", ")}`);
  if (duplicates.length) problems.push(`tool calls with more than one result: ${duplicates.join(", ")}`);
  if (problems.length) {
    throw new InvalidHistoryError(`invalid history: ${problems.join("; ")}`, [...missing, ...orphans, ...duplicates]);
  }
}
