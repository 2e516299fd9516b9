import { createHmac } from "node:crypto";

/** The key of a `whsec_<base64>` secret (Standard Webhooks); null when it is not one. */
export function webhookKey(secret: string): Buffer | null {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  if (!match?.[1]) return null;
  const key = Buffer.from(match[1], "base64");
  return key.length >= 24 && key.length <= 64 ? key : null;
}

/**
 * The key that signs one API key's deliveries besides the server's: an HMAC of the API key's
 * whole digest under the server's key. It is the same on every instance and after a restart,
 * and deriving it takes both WEBHOOK_SECRET and the API key (or its whole digest, which only
 * the server holds): a holder of WEBHOOK_SECRET (a receiver of every delivery) knows only
 * owner ids, which are not enough.
 */
export function ownerWebhookKey(serverKey: Buffer, keyDigest: Buffer): Buffer {
  return createHmac("sha256", serverKey).update("agent-server webhook owner\0").update(keyDigest).digest();
}

/** Each owner's signing key (ownerWebhookKey), given how to find an owner's API key digest. */
export function ownerWebhookKeys({
  serverKey,
  digestOf,
}: {
  serverKey: Buffer | null;
  digestOf: (owner: string) => Buffer | null;
}): (owner: string) => Buffer | null {
  return (owner) => {
    const digest = serverKey && digestOf(owner);
    return serverKey && digest ? ownerWebhookKey(serverKey, digest) : null;
  };
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
