import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";

/** What a stream token grants: reading one run's events, as the key that owns the run. */
export interface StreamGrant {
  runId: string;
  /** The owning key's owner id; null when the server runs without keys. */
  owner: string | null;
}

const Payload = z.strictObject({ r: z.string().min(1), o: z.string().nullable(), e: z.number().int() });

const b64 = (data: Buffer | string) => Buffer.from(data).toString("base64url");

/**
 * Short-lived, read-only tokens for browsers, which cannot send an `Authorization` header
 * with `EventSource`: `base64url(payload).base64url(HMAC-SHA256(payload))`, the payload
 * naming the run, the owner and the expiry. The route checks that the token names the run it
 * asks for; anything else (another run, another route, expired, altered) is refused.
 */
export class StreamTokens {
  readonly #secret: Buffer;

  constructor(private readonly options: { secret: Buffer; ttlMs: number; now?: () => number }) {
    this.#secret = options.secret;
  }

  /**
   * The signing secret: STREAM_TOKEN_SECRET when set; else derived from the API keys (tokens
   * then outlive a restart with the same keys, and die when the keys change); else random
   * for this process (without keys a token is not needed to read a stream).
   */
  static secretFrom({ configured, apiKeys }: { configured?: string; apiKeys: readonly string[] }): Buffer {
    if (configured) return Buffer.from(configured, "utf8");
    if (apiKeys.length === 0) return randomBytes(32);
    const hmac = createHmac("sha256", "agent-server stream tokens");
    for (const key of [...apiKeys].sort()) hmac.update(`${key.length}:${key}`);
    return hmac.digest();
  }

  #now(): number {
    return this.options.now?.() ?? Date.now();
  }

  #sign(payload: string): Buffer {
    return createHmac("sha256", this.#secret).update(payload).digest();
  }

  issue(grant: StreamGrant): { token: string; expiresAt: string } {
    const expires = this.#now() + this.options.ttlMs;
    const payload = b64(JSON.stringify({ r: grant.runId, o: grant.owner, e: expires }));
    return { token: `${payload}.${b64(this.#sign(payload))}`, expiresAt: new Date(expires).toISOString() };
  }

  /** The grant `token` carries when it is genuine and unexpired, else null. */
  verify(token: string): StreamGrant | null {
    const [payload, signature, extra] = token.split(".");
    if (!payload || !signature || extra !== undefined) return null;
    const expected = this.#sign(payload);
    const given = Buffer.from(signature, "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let parsed: z.infer<typeof Payload>;
    try {
      parsed = Payload.parse(JSON.parse(Buffer.from(payload, "base64url").toString("utf8")));
    } catch {
      return null;
    }
    if (parsed.e <= this.#now()) return null;
    return { runId: parsed.r, owner: parsed.o };
  }
}

/** The only route a stream token opens. */
export const STREAM_TOKEN_ROUTE = "/runs/:id/events";

/**
 * The owner a request's `?token=` speaks for: only on `GET /runs/{id}/events` (and its `HEAD`,
 * answered as the GET is), only for the run the token names, and only a token issued under a
 * key. Else null.
 */
export function streamTokenOwner(
  tokens: StreamTokens,
  request: { method: string; routeOptions: { url?: string }; params: unknown; query: unknown },
): string | null {
  if ((request.method !== "GET" && request.method !== "HEAD") || request.routeOptions.url !== STREAM_TOKEN_ROUTE) {
    return null;
  }
  const token = (request.query as { token?: unknown } | undefined)?.token;
  const runId = (request.params as { id?: unknown } | undefined)?.id;
  if (typeof token !== "string" || typeof runId !== "string") return null;
  const grant = tokens.verify(token);
  return grant && grant.runId === runId ? grant.owner : null;
}
