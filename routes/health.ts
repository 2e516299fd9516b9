import type { App, AppContext } from "../src/app-context.js";
import { checkReadiness } from "../src/http/readiness.js";

export default function healthRoutes(app: App, ctx: AppContext) {
  app.get("/healthz", async () => ({ status: "ok" }));

  app.get("/readyz", async (_request, reply) => {
    const readiness = await checkReadiness(ctx);
    return reply.status(readiness.ready ? 200 : 503).send(readiness);
  });
}
