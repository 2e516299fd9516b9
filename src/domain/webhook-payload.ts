import type { RunEvent } from "./run-events.js";
import type { WebhookEventType } from "./webhook.js";

/** What one delivery carries: the Standard Webhooks payload `{type, timestamp, data}`. */
export interface WebhookPayload {
  type: WebhookEventType;
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * The payload an event of a run sends to a target that asked for its type, or null when the
 * event is not one a webhook carries.
 */
export function webhookPayload(event: RunEvent, sessionId: string): WebhookPayload | null {
  const base = { runId: event.runId, sessionId };
  switch (event.type) {
    case "run.started":
    case "run.queued":
      return { type: event.type, timestamp: event.at, data: base };
    case "run.finished":
      return { type: "run.finished", timestamp: event.at, data: { ...base, run: event.run } };
    case "approval.requested":
      return {
        type: "approval.requested",
        timestamp: event.at,
        data: { ...base, toolCallId: event.toolCallId, tool: event.tool, input: event.input, reason: event.reason },
      };
    default:
      return null;
  }
}

/** Whether an event of this type may become a delivery (checked before any lookup). */
export const carriesWebhook = (type: string): boolean =>
  type === "run.finished" || type === "approval.requested" || type === "run.started" || type === "run.queued";
