import { z } from "zod";

/** The events a webhook target may ask for. */
export const WEBHOOK_EVENTS = ["run.finished", "approval.requested", "run.started", "run.queued"] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

/** What a target gets when it names no events. */
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEventType[] = ["run.finished", "approval.requested"];

/** Where a session's or a run's events are posted, and which of them. */
export interface WebhookTarget {
  url: string;
  events: WebhookEventType[];
}

export const WebhookTargetSchema = z
  .strictObject({
    url: z
      .string()
      .max(2048)
      .refine(
        (value) => {
          try {
            const { protocol } = new URL(value);
            return protocol === "http:" || protocol === "https:";
          } catch {
            return false;
          }
        },
        { error: "must be an http or https URL" },
      ),
    events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length).optional(),
  })
  .transform(
    (target): WebhookTarget => ({
      url: target.url,
      events: [...new Set(target.events ?? DEFAULT_WEBHOOK_EVENTS)],
    }),
  );

/**
 * Whether `url` carries credentials (`user:pass@`): the sender would not send them (a request
 * drops a URL's userinfo), so a receiver that wants them refuses every delivery. Receivers
 * authenticate the server by the signature instead.
 */
export function carriesCredentials(url: string): boolean {
  try {
    const { username, password } = new URL(url);
    return username !== "" || password !== "";
  } catch {
    return false;
  }
}

/** The stored form (JSON read back from the database). */
export const StoredWebhookTargetSchema = z.object({ url: z.string(), events: z.array(z.enum(WEBHOOK_EVENTS)) });

/**
 * A run's target as its start resolved it (the run's own, else its session's, else the
 * server's WEBHOOK_URL) and its record keeps: `serverDefault` says it is the server's. With
 * API keys that is the operator's receiver, hidden from the keys (see RunService.webhooks)
 * whatever WEBHOOK_URL says now: a run keeps its target across a change of WEBHOOK_URL (a
 * rotated token, instances of a rolling deploy configured apart). Absent: unknown, a target
 * stored without the flag (by an older version, or an older instance of a rolling deploy),
 * which may be either; it stays absent when the target is written again, so the versions that
 * read the flag (or its absence) read it as they did.
 */
export interface ResolvedWebhookTarget extends WebhookTarget {
  serverDefault?: boolean;
}

/**
 * Whether `target` may be the server's WEBHOOK_URL: flagged so, or stored without the flag.
 * Whoever must not see the operator's receiver must not see such a target: taking a key's own
 * receiver for the operator's only hides from that key a URL it set itself, while the converse
 * would show every key the operator's (token and all).
 */
export const maybeServerDefault = (target: ResolvedWebhookTarget | null): boolean =>
  target !== null && target.serverDefault !== false;

/** A run's stored target (JSON read back); `serverDefault` stays absent when it was not stored (unknown). */
export const StoredResolvedTargetSchema = StoredWebhookTargetSchema.extend({
  serverDefault: z.boolean().optional(),
});
