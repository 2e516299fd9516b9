import { createHmac } from "node:crypto";

/** The key of a `whsec_<base64>` secret (Standard Webhooks); null when it is not one. */
export function webhookKey(secret: string): Buffer | null {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  if (!match?.[1]) return null;
  const key = Buffer.from(match[1], "base64");
  return key.length >= 24 && key.length <= 64 ? key : null;
}

/** The Standard Webhooks headers of one delivery: id, timestamp (seconds) and the `v1` signature of `id.timestamp.body`. */
export function signedHeaders({
  key,
  id,
  timestamp,
  body,
}: {
  key: Buffer;
  id: string;
  timestamp: number;
  body: string;
}): Record<string, string> {
  const signature = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": `v1,${signature}`,
  };
}
