import type { App, AppContext } from "../src/app-context.js";
import { ApprovalParams, DecisionBody, PageQuery, RunParams } from "../src/http/schemas.js";

export default function approvalRoutes(app: App, ctx: AppContext) {
  app.get("/runs/:id/approvals", { schema: { params: RunParams, querystring: PageQuery } }, async (request) =>
    ctx.runs.pendingApprovals(request.params.id, request.owner, {
      limit: request.query.limit,
      cursor: request.query.cursor ?? null,
    }),
  );

  app.post(
    "/runs/:id/approvals/:toolCallId",
    { schema: { params: ApprovalParams, body: DecisionBody } },
    async (request) =>
      ctx.runs.decide({
        runId: request.params.id,
        owner: request.owner,
        toolCallId: request.params.toolCallId,
        decision: request.body.decision,
        reason: request.body.reason,
      }),
  );
}
