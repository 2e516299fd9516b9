import { createHmac } from "node:crypto";

/** The key of a `whsec_<base64>` secret (Standard Webhooks); null when it is not one. */
export function webhookKey(secret: string): Buffer | null {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  if (!match?.[1]) return null;
  const key = Buffer.from(match[1], "base64");
  return key.length >= 24 && key.length <= 64 ? key : null;
}

/**
 * The key that signs one owner's (API key's) deliveries besides the server's: an HMAC of the
 * owner id under the server's key, so it is the same on every instance and after a restart,
 * no owner can derive another's, and none can derive the server's.
 */
export function ownerWebhookKey(serverKey: Buffer, owner: string): Buffer {
  return createHmac("sha256", serverKey).update(`agent-server webhook owner\0${owner}`).digest();
}

/** A key as a Standard Webhooks secret: `whsec_` and its base64. */
export const webhookSecretOf = (key: Buffer): string => `whsec_${key.toString("base64")}`;

/**
 * The Standard Webhooks headers of one delivery: id, timestamp (seconds) and one `v1`
 * signature of `id.timestamp.body` per key, space-separated (a receiver accepts the delivery
 * when any of them verifies with its secret).
 */
export function signedHeaders({
  keys,
  id,
  timestamp,
  body,
}: {
  keys: readonly Buffer[];
  id: string;
  timestamp: number;
  body: string;
}): Record<string, string> {
  const signed = `${id}.${timestamp}.${body}`;
  const signatures = keys.map((key) => `v1,${createHmac("sha256", key).update(signed).digest("base64")}`);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatures.join(" "),
  };
}
