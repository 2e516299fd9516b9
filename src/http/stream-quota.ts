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
  readonly #holding = new WeakSet<FastifyReply>();

  /** `max`: the connections one owner may hold; 0: no limit. */
  constructor(readonly max: number) {}

  /**
   * Takes one of `owner`'s slots for `reply` until its response closes (the stream ended, the
   * client went away, the server stopped), or throws 429 TOO_MANY_STREAMS when `owner` holds
   * them all. Without an owner (no keys) or a limit, nothing is counted. A reply holds at
   * most one slot however often it is asked.
   */
  hold(owner: string | null, reply: FastifyReply): void {
    if (owner === null || this.max === 0 || this.#holding.has(reply)) return;
    const raw = reply.raw;
    // A response already closed will not say so again: it holds no connection to count.
    if (raw.closed || raw.destroyed) return;
    const count = this.#held.get(owner) ?? 0;
    if (count >= this.max) throw tooManyStreams(this.max, STREAM_RETRY_AFTER_S);
    this.#held.set(owner, count + 1);
    this.#holding.add(reply);
    raw.once("close", () => {
      const left = (this.#held.get(owner) ?? 1) - 1;
      if (left > 0) this.#held.set(owner, left);
      else this.#held.delete(owner);
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
      if (isLongLived(request, reply)) quota.hold(request.owner, reply);
      return handler.call(this, request, reply);
    };
  });
}
