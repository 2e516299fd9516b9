import { readFileSync } from "node:fs";
import type { App, AppContext } from "../src/app-context.js";
import { openapiPath } from "../src/http/openapi-path.js";

export default function openapiRoutes(app: App, _ctx: AppContext) {
  const spec = readFileSync(openapiPath(), "utf8");
  app.get("/openapi.yaml", async (_request, reply) => reply.type("application/yaml; charset=utf-8").send(spec));
}
