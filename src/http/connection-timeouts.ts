import type { Config } from "../config.js";

/**
 * The timeouts of every port this server listens on (PORT, METRICS_PORT): a client that sends
 * its request slowly, or not at all, is cut (408) instead of holding a connection (and a file
 * descriptor) for ever; an idle keep-alive connection is closed. Responses are not limited by
 * these (see cutStalledAnswers). Fastify's server options.
 *
 * requestTimeout is also given to http.createServer (`http`): Node checks headersTimeout <=
 * requestTimeout when the server is created, so both must be there together (any pair the
 * configuration accepts, also above Node's default requestTimeout of 300000).
 */
export function connectionTimeouts(
  config: Pick<Config, "REQUEST_TIMEOUT_MS" | "KEEP_ALIVE_TIMEOUT_MS" | "HEADERS_TIMEOUT_MS">,
) {
  return {
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT_MS,
    http: {
      requestTimeout: config.REQUEST_TIMEOUT_MS,
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(1000, config.HEADERS_TIMEOUT_MS),
    },
  };
}
