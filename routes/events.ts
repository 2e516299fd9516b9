import type { App, AppContext } from "../src/app-context.js";
import { EventsQuery, RunParams } from "../src/http/schemas.js";
import { nothingLeft, resumePoint, streamRunEvents } from "../src/http/sse.js";

export default function eventRoutes(app: App, ctx: AppContext) {
  app.get(
    "/runs/:id/events",
    { sse: { kind: "manual" }, schema: { params: RunParams, querystring: EventsQuery } },
    async (request, reply) => {
      await ctx.runs.get(request.params.id, request.owner);
      const after = resumePoint(request.headers["last-event-id"], request.query.after);
      if (await nothingLeft(ctx.store, { runId: request.params.id, after })) return reply.status(204).send();
      return streamRunEvents(ctx, reply, { runId: request.params.id, after, reasoning: request.query.reasoning });
    },
  );

  // A token for `GET /runs/{id}/events?token=`: what a browser's EventSource can send.
  app.post("/runs/:id/stream-token", { schema: { params: RunParams } }, async (request) => {
    const run = await ctx.runs.get(request.params.id, request.owner);
    const { token, expiresAt } = ctx.streamTokens.issue({ runId: run.id, owner: request.owner });
    return { token, expiresAt, eventsUrl: `/runs/${run.id}/events?token=${encodeURIComponent(token)}` };
  });
}
