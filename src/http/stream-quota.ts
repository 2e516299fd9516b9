import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from "fastify";
import { tooManyStreams } from "../errors.js";

/** The Retry-After of a refused stream: a slot frees when one of the key's connections closes, whenever that is. */
export const STREAM_RETRY_AFTER_S = 5;

/**
 * The long-lived connections (event streams, `?wait=true` waits, steers) each owner (API key)
 * holds at once, on this instance: each holds a file descriptor for as long as it is open,
 * so one key must not take every one the process has (MAX_STREAMS_PER_KEY).
 */
export class StreamQuota {
  readonly #held = new Map<string, number>();
  /** The streams opened with an owner's stream tokens (counted in `#held` too). */
  readonly #byTokens = new Map<string, number>();
  readonly #holding = new WeakSet<FastifyReply>();
  /**
   * At most half an owner's slots go to the holders of its stream tokens (a browser, whoever a
   * token leaked to): they cannot take every slot of the key that issued them.
   */
  readonly #tokenMax: number;

  /** `max`: the connections one owner may hold; 0: no limit. */
  constructor(readonly max: number) {
    this.#tokenMax = Math.max(1, Math.floor(max / 2));
  }

  /**
   * Takes one of `owner`'s slots for `reply` until its response closes (the stream ended, the
   * client went away, the server stopped), or throws 429 TOO_MANY_STREAMS when `owner` holds
   * them all (scope `key`), or, `byToken`, when its stream tokens' streams hold their half of
   * them (scope `stream-token`; `limit` is `max` either way). Without an
   * owner (no keys) or a limit, nothing is counted. A reply holds at most one slot however
   * often it is asked.
   */
  hold(owner: string | null, reply: FastifyReply, { byToken = false }: { byToken?: boolean } = {}): void {
    if (owner === null || this.max === 0 || this.#holding.has(reply)) return;
    const raw = reply.raw;
    // A response already closed will not say so again: it holds no connection to count (and
    // its stream follows nothing, see openStream).
    if (raw.closed || raw.destroyed) return;
    const retryAfterSeconds = STREAM_RETRY_AFTER_S;
    if ((this.#held.get(owner) ?? 0) >= this.max) throw tooManyStreams({ limit: this.max, retryAfterSeconds });
    if (byToken && (this.#byTokens.get(owner) ?? 0) >= this.#tokenMax) {
      throw tooManyStreams({ limit: this.max, retryAfterSeconds, tokenLimit: this.#tokenMax });
    }
    const counts = byToken ? [this.#held, this.#byTokens] : [this.#held];
    for (const count of counts) count.set(owner, (count.get(owner) ?? 0) + 1);
    this.#holding.add(reply);
    raw.once("close", () => {
      for (const count of counts) {
        const left = (count.get(owner) ?? 1) - 1;
        if (left > 0) count.set(owner, left);
        else count.delete(owner);
      }
    });
  }
}

/**
 * Whether a request is answered by a long-lived connection: as an event stream, or by waiting
 * (`?wait=true`, or a start with `ifBusy: "steer"`, answered once the run takes its input).
 */
export function isLongLived(request: FastifyRequest, reply: FastifyReply): boolean {
  return (
    reply.sse !== undefined ||
    (request.query as { wait?: unknown } | undefined)?.wait === true ||
    (request.body as { ifBusy?: unknown } | null | undefined)?.ifBusy === "steer"
  );
}

declare module "fastify" {
  interface FastifyInstance {
    streamQuota: StreamQuota;
  }
}

/**
 * Puts every route's long-lived answers under `quota`: a request its route answers as an
 * event stream (the SSE plugin has negotiated it: `reply.sse` is set when the handler is
 * called) or with a wait holds a slot of its owner from before its handler runs, so a refusal
 * comes before anything is started or streamed. Registered before the SSE plugin, whose
 * handler wrapper then calls this one's with `reply.sse` decided; `openStream` holds one too,
 * so a stream opened any other way is counted all the same.
 */
export function limitStreams(app: FastifyInstance, quota: StreamQuota): void {
  app.decorate("streamQuota", quota);
  if (quota.max === 0) return;
  app.addHook("onRoute", (route) => {
    const handler = route.handler as (this: FastifyInstance, ...args: Parameters<RouteHandlerMethod>) => unknown;
    route.handler = function limited(this: FastifyInstance, request, reply) {
      if (isLongLived(request, reply)) quota.hold(request.owner, reply, { byToken: request.byStreamToken });
      return handler.call(this, request, reply);
    };
  });
}
