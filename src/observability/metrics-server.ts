import Fastify from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import metricsRoutes from "../../routes/metrics.js";
import type { App, AppContext } from "../app-context.js";

/**
 * With METRICS_PORT set, GET /metrics is served there (on HOST, without API keys: keep that
 * port off networks that should not read the metrics) and not on PORT. Resolves with the
 * listening app, to close at shutdown; null when METRICS_PORT is unset.
 */
export async function listenForMetrics(ctx: AppContext): Promise<App | null> {
  const port = ctx.config.METRICS_PORT;
  if (port === undefined) return null;
  const app: App = Fastify({ forceCloseConnections: true }).withTypeProvider<ZodTypeProvider>();
  metricsRoutes(app, ctx);
  await app.listen({ port, host: ctx.config.HOST });
  return app;
}
