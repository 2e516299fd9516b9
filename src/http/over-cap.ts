import type { FastifyInstance } from "fastify";
import { tooManyConnections } from "../errors.js";
import type { OverCap } from "./connection-cap.js";

/**
 * The Retry-After of a request over the cap: a connection frees when another client closes
 * one, whenever that is.
 */
export const OVER_CAP_RETRY_AFTER_S = 5;

/** What a connection over the cap is still served: liveness, so that a probe does not restart a server that is only full. */
const SERVED_OVER_CAP = "/healthz";

/**
 * Answers each request on a connection accepted over MAX_CONNECTIONS (`overCap`), then closes
 * it: GET or HEAD /healthz goes on as on any connection (the host guard still applies to it),
 * and so does a CORS preflight (answered by CORS, after the host guard), so that a browser
 * gets to read the refusal of its request; anything else is refused at once, 503
 * TOO_MANY_CONNECTIONS with Retry-After, before the host guard, CORS, authentication or the
 * route run. The refusal carries the CORS headers an origin of `corsOrigins` ("*": any) needs
 * to read it and its Retry-After. Register it before those hooks.
 */
export function answerOverCap(
  app: FastifyInstance,
  overCap: OverCap,
  { corsOrigins = [] }: { corsOrigins?: readonly string[] } = {},
): void {
  const anyOrigin = corsOrigins.includes("*");
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook("onRequest", (request, reply, done) => {
    if (!overCap(request.raw.socket)) return done();
    const liveness =
      request.routeOptions.url === SERVED_OVER_CAP && (request.method === "GET" || request.method === "HEAD");
    const preflight =
      corsOrigins.length > 0 &&
      request.method === "OPTIONS" &&
      request.headers.origin !== undefined &&
      request.headers["access-control-request-method"] !== undefined;
    reply.header("connection", "close");
    if (liveness || preflight) return done();
    const origin = request.headers.origin;
    if (origin !== undefined && (anyOrigin || corsOrigins.includes(origin))) {
      reply.header("access-control-allow-origin", origin);
      reply.header("access-control-expose-headers", "retry-after, x-request-id");
      reply.header("vary", "Origin");
    }
    done(tooManyConnections(OVER_CAP_RETRY_AFTER_S));
  });
}
