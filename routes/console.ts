import type { App } from "../src/app-context.js";
import { consoleAsset, consolePage, loadConsole } from "../src/http/console.js";

/** The operator console (built by `npm run build` into dist/console): open routes, the page asks for a key. */
export default function consoleRoutes(app: App) {
  const files = loadConsole();
  app.get("/", async (_request, reply) => {
    const { body, headers } = consolePage(files);
    return reply.headers(headers).send(body);
  });
  app.get("/console/assets/:file", async (request, reply) => {
    const { body, headers } = consoleAsset(files, (request.params as { file: string }).file);
    return reply.headers(headers).send(body);
  });
}
