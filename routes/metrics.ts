import type { App, AppContext } from "../src/app-context.js";

export default function metricsRoutes(app: App, ctx: AppContext) {
  app.get("/metrics", async (_request, reply) => {
    const { contentType, text } = await ctx.metrics.exposition();
    return reply.type(contentType).send(text);
  });
}
