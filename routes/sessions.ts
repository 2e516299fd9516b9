import type { App, AppContext } from "../src/app-context.js";
import { CreateSessionBody, MessagePageQuery, PageQuery, SessionParams } from "../src/http/schemas.js";

export default function sessionRoutes(app: App, ctx: AppContext) {
  app.post("/sessions", { schema: { body: CreateSessionBody } }, async (request, reply) => {
    const session = await ctx.sessions.create(request.body, request.owner);
    return reply.status(201).header("location", `/sessions/${session.id}`).send(session);
  });

  app.get("/sessions", { schema: { querystring: PageQuery } }, async (request) =>
    ctx.sessions.list(request.owner, { limit: request.query.limit, cursor: request.query.cursor ?? null }),
  );

  app.get("/sessions/:id", { schema: { params: SessionParams } }, async (request) =>
    ctx.sessions.get(request.params.id, request.owner),
  );

  app.delete("/sessions/:id", { schema: { params: SessionParams } }, async (request, reply) => {
    await ctx.sessions.delete(request.params.id, request.owner);
    return reply.status(204).send();
  });

  app.get(
    "/sessions/:id/messages",
    { schema: { params: SessionParams, querystring: MessagePageQuery } },
    async (request) =>
      ctx.sessions.messages(request.params.id, request.owner, {
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
        order: request.query.order,
      }),
  );
}
