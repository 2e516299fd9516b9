import Fastify from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { Logger } from "pino";
import metricsRoutes from "../../routes/metrics.js";
import type { App, AppContext } from "../app-context.js";
import { ConfigError } from "../config.js";
import { listenProblem } from "../startup-checks.js";
import { capConnections, METRICS_MAX_CONNECTIONS } from "./connection-cap.js";
import { connectionTimeouts } from "./connection-timeouts.js";
import { errorHandler, notFoundHandler } from "./error-handler.js";
import { guardHosts } from "./host-guard.js";
import { schemaController } from "./schema-compilers.js";

/**
 * With METRICS_PORT set, GET /metrics is served there (on HOST, without API keys: keep that
 * port off networks that should not read the metrics) and not on PORT. Resolves with the
 * listening app, to close at shutdown; null when METRICS_PORT is unset. A port it cannot listen
 * on is a ConfigError naming METRICS_PORT. It holds at most METRICS_MAX_CONNECTIONS connections
 * (fewer when MAX_CONNECTIONS is lower; as many when it is 0, no cap on PORT: this port takes no
 * keys) and drops the others, logged to `log`: no over-cap answers here. Keyless always, it
 * refuses what PORT refuses without keys: a request whose `Host` names neither an IP,
 * `localhost`, HOST nor ALLOWED_HOSTS (403 HOST_NOT_ALLOWED, DNS rebinding).
 */
export async function listenForMetrics(ctx: AppContext, log: Logger): Promise<App | null> {
  const port = ctx.config.METRICS_PORT;
  if (port === undefined) return null;
  // PORT's timeouts: silent connections are cut and do not keep a scraper out of the few this port holds.
  const app: App = Fastify({
    forceCloseConnections: true,
    schemaController,
    ...connectionTimeouts(ctx.config),
  }).withTypeProvider<ZodTypeProvider>();
  const max = ctx.config.MAX_CONNECTIONS;
  capConnections(app.server, max === 0 ? METRICS_MAX_CONNECTIONS : Math.min(max, METRICS_MAX_CONNECTIONS), log, {
    portSetting: "METRICS_PORT",
    onOverCap: (fact) => ctx.metrics.connectionOverCap(fact),
  });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  guardHosts(app, { enabled: true, configuredHost: ctx.config.HOST, names: ctx.config.ALLOWED_HOSTS, keyless: true });
  metricsRoutes(app, ctx);
  try {
    await app.listen({ port, host: ctx.config.HOST });
  } catch (err) {
    const problem = listenProblem(err, { host: ctx.config.HOST, port, variable: "METRICS_PORT" });
    throw problem ? new ConfigError([problem]) : err;
  }
  return app;
}
