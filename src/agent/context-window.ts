import type { AgentMessage } from "./messages.js";

/** What a message sends beyond its content and tool-call arguments (see ModelClient.sentExtraChars). */
export type ExtraChars = (message: AgentMessage) => number;

/**
 * Characters a message costs against `contextMaxChars`: content and tool-call arguments, plus
 * what `extra` says the provider profile sends back with it (reasoning blocks, signatures).
 */
export function messageChars(message: AgentMessage, extra?: ExtraChars): number {
  let chars = message.content.length;
  if (message.role === "assistant") for (const call of message.toolCalls ?? []) chars += call.input.length;
  return extra ? chars + extra(message) : chars;
}

/**
 * Splits a history into self-consistent units: an assistant message with all its
 * tool results is one unit; every other message is a unit of its own.
 */
export function contextUnits(history: readonly AgentMessage[]): AgentMessage[][] {
  const units: AgentMessage[][] = [];
  for (const message of history) {
    const last = units[units.length - 1];
    if (message.role === "tool" && last) last.push(message);
    else units.push([message]);
  }
  return units;
}

export type ContextWindow =
  | { ok: true; messages: AgentMessage[]; trimmedCount: number; chars: number }
  | { ok: false; message: string };

/**
 * Law 10: what is *sent* to the model is the newest whole units that fit in
 * `maxChars`; the stored history is untouched. A budget that cannot hold even
 * the newest unit is an error, never an empty send.
 */
export function selectContext(
  history: readonly AgentMessage[],
  maxChars: number | undefined,
  extra?: ExtraChars,
): ContextWindow {
  const total = history.reduce((sum, m) => sum + messageChars(m, extra), 0);
  if (maxChars === undefined || total <= maxChars) {
    return { ok: true, messages: [...history], trimmedCount: 0, chars: total };
  }
  const units = contextUnits(history);
  let used = 0;
  let first = units.length;
  while (first > 0) {
    const unit = units[first - 1] ?? [];
    const cost = unit.reduce((sum, m) => sum + messageChars(m, extra), 0);
    if (used + cost > maxChars) break;
    used += cost;
    first--;
  }
  if (first === units.length) {
    const newest = (units[units.length - 1] ?? []).reduce((sum, m) => sum + messageChars(m, extra), 0);
    return {
      ok: false,
      message: `contextMaxChars ${maxChars} is too small: the newest message unit alone needs ${newest} characters`,
    };
  }
  const messages = units.slice(first).flat();
  return { ok: true, messages, trimmedCount: history.length - messages.length, chars: used };
}
