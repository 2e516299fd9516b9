import { carriesCredentials, type WebhookTarget } from "../domain/webhook.js";
import { badRequest } from "../errors.js";
import { isPrivateAddress, literalHost } from "./address-guard.js";

/**
 * Refuses, at a session's or run's creation, a target the server will not post to: none may
 * be set without WEBHOOK_SECRET (nothing is sent unsigned), nor with credentials in its URL
 * (they would not be sent), and a target whose host is a
 * private or loopback address literal is refused unless WEBHOOK_ALLOW_PRIVATE=1 (a name is
 * checked at delivery, on the address it resolves to).
 */
export function checkWebhookTarget(
  target: WebhookTarget | undefined,
  { signing, allowPrivate }: { signing: boolean; allowPrivate: boolean },
): void {
  if (!target) return;
  if (!signing) throw badRequest("WEBHOOK_NOT_CONFIGURED", "webhooks need the server's WEBHOOK_SECRET to be set");
  if (carriesCredentials(target.url)) {
    throw badRequest(
      "WEBHOOK_TARGET_REFUSED",
      "webhook.url carries credentials (user:pass@), which deliveries do not send: a receiver checks the webhook-signature header instead",
    );
  }
  const host = literalHost(target.url);
  if (!allowPrivate && host !== null && isPrivateAddress(host)) {
    throw badRequest(
      "WEBHOOK_TARGET_REFUSED",
      `webhook.url points at ${host}, a private or loopback address; the server does not post there`,
    );
  }
}
