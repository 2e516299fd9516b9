import type { App, AppContext } from "../src/app-context.js";
import { clientGone } from "../src/http/client-gone.js";
import { PageQuery, RunParams, SessionParams, StartRunBody, StartRunQuery } from "../src/http/schemas.js";
import { streamRunEvents } from "../src/http/sse.js";
import { AdmissionWatch } from "../src/runs/admission-watch.js";

export default function runRoutes(app: App, ctx: AppContext) {
  app.post(
    "/sessions/:id/runs",
    { sse: { kind: "dual" }, schema: { params: SessionParams, body: StartRunBody, querystring: StartRunQuery } },
    async (request, reply) => {
      const key = request.headers["idempotency-key"];
      // A stream of the run this request starts begins with the events held since its admission.
      const admission = reply.sse ? new AdmissionWatch(ctx.hub) : undefined;
      // What waits for an answer here (a steer, `?wait=true`) stops once its client has left.
      const gone = clientGone(reply);
      try {
        const { run, created, steered, replayed } = await ctx.runs.start({
          sessionId: request.params.id,
          owner: request.owner,
          ...request.body,
          idempotencyKey: typeof key === "string" && key !== "" ? key.slice(0, 256) : undefined,
          watch: admission,
          gone,
        });
        // Every answer names the run: a stream whose client is cut before its first event too.
        reply.header("location", `/runs/${run.id}`);
        if (reply.sse)
          return await streamRunEvents(ctx, reply, {
            runId: run.id,
            after: 0,
            reasoning: request.query.reasoning,
            // A run this request created had not finished when it was stored; one found again (a
            // replay) may have, and the stream reads its stored status.
            finished: created ? false : undefined,
            admission,
          });
        // An answer the wait cannot give (a shutdown) still says where the run is.
        if (request.query.wait) return ctx.runs.waitForFinish(run.id, gone);
        // A replay is answered as the first request was; input that joined the active run, 202.
        reply.status(steered ? 202 : 201);
        if ((!created && !steered) || replayed) reply.header("idempotent-replayed", "true");
        return reply.send(run);
      } finally {
        admission?.release();
      }
    },
  );

  app.get("/sessions/:id/runs", { schema: { params: SessionParams, querystring: PageQuery } }, async (request) =>
    ctx.runs.listForSession(request.params.id, request.owner, {
      limit: request.query.limit,
      cursor: request.query.cursor ?? null,
    }),
  );

  app.get("/runs/:id", { schema: { params: RunParams } }, async (request) =>
    ctx.runs.get(request.params.id, request.owner),
  );

  app.delete("/runs/:id", { schema: { params: RunParams } }, async (request, reply) => {
    const { run, accepted } = await ctx.runs.cancel(request.params.id, request.owner);
    return reply.status(accepted ? 202 : 200).send(run);
  });

  app.get("/runs/:id/webhooks", { schema: { params: RunParams, querystring: PageQuery } }, async (request) =>
    ctx.runs.webhooks(request.params.id, request.owner, {
      limit: request.query.limit,
      cursor: request.query.cursor ?? null,
    }),
  );

  app.get("/runs/:id/steps", { schema: { params: RunParams, querystring: PageQuery } }, async (request) =>
    ctx.runs.steps(request.params.id, request.owner, {
      limit: request.query.limit,
      cursor: request.query.cursor ?? null,
    }),
  );
}
