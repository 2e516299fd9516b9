import type { App, AppContext } from "../src/app-context.js";
import { EventsQuery, RunParams } from "../src/http/schemas.js";
import { resumePoint, streamRunEvents } from "../src/http/sse.js";

export default function eventRoutes(app: App, ctx: AppContext) {
  app.get(
    "/runs/:id/events",
    { sse: { kind: "manual" }, schema: { params: RunParams, querystring: EventsQuery } },
    async (request, reply) => {
      await ctx.runs.get(request.params.id, request.owner);
      const after = resumePoint(request.headers["last-event-id"], request.query.after);
      return streamRunEvents(ctx, reply, { runId: request.params.id, after });
    },
  );
}
