import type { App, AppContext } from "../src/app-context.js";
import { EventsQuery, RunParams } from "../src/http/schemas.js";
import { nothingLeft, resumePoint, streamRunEvents } from "../src/http/sse.js";

export default function eventRoutes(app: App, ctx: AppContext) {
  app.get(
    "/runs/:id/events",
    { sse: { kind: "manual" }, schema: { params: RunParams, querystring: EventsQuery } },
    async (request, reply) => {
      const { status } = await ctx.runs.access(request.params.id, request.owner);
      const after = resumePoint(request.headers["last-event-id"], request.query.after);
      // A run read finished has ended for good; one read unfinished is read again once its
      // stream follows it (it may finish meanwhile).
      const finished = status === "finished" ? true : undefined;
      if (await nothingLeft(ctx.store, { runId: request.params.id, after, finished })) return reply.status(204).send();
      return streamRunEvents(ctx, reply, {
        runId: request.params.id,
        after,
        reasoning: request.query.reasoning,
        finished,
      });
    },
  );

  // A token for `GET /runs/{id}/events?token=`: what a browser's EventSource can send.
  app.post("/runs/:id/stream-token", { schema: { params: RunParams } }, async (request) => {
    const runId = request.params.id;
    await ctx.runs.access(runId, request.owner);
    const { token, expiresAt } = ctx.streamTokens.issue({ runId, owner: request.owner });
    return { token, expiresAt, eventsUrl: `/runs/${runId}/events?token=${encodeURIComponent(token)}` };
  });
}
