import type { App, AppContext } from "../src/app-context.js";
import { conflict } from "../src/errors.js";
import { webhookKey, webhookSecretOf } from "../src/webhooks/signature.js";

/**
 * The caller's own webhook secret: the deliveries of its sessions' runs carry a signature with
 * it besides the server's (WEBHOOK_SECRET), so a receiver that verifies with it accepts no
 * delivery about another API key's runs. Only with API keys and WEBHOOK_SECRET set.
 */
export default function webhookSecretRoutes(app: App, ctx: AppContext) {
  const signs = webhookKey(ctx.config.WEBHOOK_SECRET) !== null;
  app.get("/webhook-secret", async (request, reply) => {
    if (!signs) {
      throw conflict("WEBHOOK_SECRET_UNAVAILABLE", "the server has no WEBHOOK_SECRET: it sends no webhooks");
    }
    const key = request.owner === null ? null : ctx.webhookOwnerKey(request.owner);
    if (key === null) {
      throw conflict(
        "WEBHOOK_SECRET_UNAVAILABLE",
        "the server has no API keys: its deliveries are signed with WEBHOOK_SECRET alone",
      );
    }
    reply.header("cache-control", "no-store");
    return { secret: webhookSecretOf(key) };
  });
}
