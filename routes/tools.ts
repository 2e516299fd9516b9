import type { App, AppContext } from "../src/app-context.js";

export default function toolRoutes(app: App, ctx: AppContext) {
  app.get("/tools", async () => ({ items: ctx.tools, nextCursor: null }));
}
