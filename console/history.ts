import { $, el } from "./dom.js";
import { shownExactly } from "./shown-exactly.js";
import type { Message } from "./types.js";

/**
 * Appends one committed message to the history: its text, a tool result's outcome, its tool
 * calls (shown exactly, as on an approval card: what they run is what is read).
 */
export function showMessage(message: Message): void {
  const item = el("li", { class: message.role + (message.isError ? " error" : ""), "data-message": message.id });
  if (message.role === "tool")
    item.textContent = `${message.isError ? "✗" : "✓"} ${message.toolCallId}: ${message.content}`;
  else item.textContent = message.content;
  for (const call of message.toolCalls ?? [])
    item.append(el("div", { class: "call" }, shownExactly(`→ ${call.name}(${call.input})`)));
  $("history").append(item);
}

/** Says, above them, that the history shown starts late: the session has more messages than the console reads at once. */
export function showCut(shown: number): void {
  $("history").prepend(
    el(
      "li",
      { class: "cut" },
      `only the latest ${shown} messages are shown: this session has earlier ones (read them with the API)`,
    ),
  );
}
