import type { App, AppContext } from "../src/app-context.js";
import { checkReadiness, summaryOf } from "../src/http/readiness.js";

export default function healthRoutes(app: App, ctx: AppContext) {
  app.get("/healthz", async () => ({ status: "ok" }));

  // Open to every caller (load balancers); with AGENT_API_KEYS set, why a check fails and where
  // shell commands run are told to a caller with a valid key only (see summaryOf).
  app.get("/readyz", async (request, reply) => {
    const readiness = await checkReadiness(ctx);
    const trusted = !ctx.apiKeys.enabled || ctx.apiKeys.authenticate(request.headers.authorization) !== null;
    return reply.status(readiness.ready ? 200 : 503).send(trusted ? readiness : summaryOf(readiness));
  });
}
