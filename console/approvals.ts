import { api, errorText } from "./api.js";
import { $, el, status } from "./dom.js";
import { runPath } from "./paths.js";
import { shownExactly } from "./shown-exactly.js";
import type { RunEvent } from "./types.js";

/** A pending call's card: the tool, its reason, its arguments shown exactly; Approve, Deny with a reason. */
export function showApproval(event: Extract<RunEvent, { type: "approval.requested" }>): void {
  const card = el("div", { class: "approval", "data-tool-call": event.toolCallId });
  card.append(el("strong", {}, shownExactly(`${event.tool} asks for approval`)), el("p", {}, event.reason));
  card.append(el("pre", {}, shownExactly(JSON.stringify(event.input, null, 2))));
  const reason = el("input", { class: "deny-reason", placeholder: "reason (optional)" }) as HTMLInputElement;
  const decide = (decision: "approve" | "deny") => async () => {
    try {
      await api("POST", runPath(event.runId, `/approvals/${encodeURIComponent(event.toolCallId)}`), {
        decision,
        ...(reason.value ? { reason: reason.value } : {}),
      });
    } catch (err) {
      status(errorText(err));
    }
  };
  const approve = el("button", { type: "button", class: "approve" }, "Approve");
  const deny = el("button", { type: "button", class: "deny" }, "Deny");
  approve.onclick = decide("approve");
  deny.onclick = decide("deny");
  card.append(approve, deny, reason);
  $("approvals").append(card);
}

/** Removes the card of a call decided (here or elsewhere). */
export function removeApproval(toolCallId: string): void {
  document.querySelector(`.approval[data-tool-call="${CSS.escape(toolCallId)}"]`)?.remove();
}
