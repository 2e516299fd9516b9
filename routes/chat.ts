import type { FastifyReply, FastifyRequest } from "fastify";
import type { App, AppContext } from "../src/app-context.js";
import { ChatBody, chatAction, checkChatInput } from "../src/chat/chat-request.js";
import { streamChat } from "../src/chat/chat-stream.js";
import { continuationOf } from "../src/chat/continuation.js";
import { startChatRun } from "../src/chat/start-chat-run.js";
import { conflict } from "../src/errors.js";
import { ChatStreamParams, SessionParams } from "../src/http/schemas.js";
import { AdmissionWatch } from "../src/runs/admission-watch.js";

/** The AI SDK's UI message stream protocol (what `useChat` speaks) over a session's runs. */
export default function chatRoutes(app: App, ctx: AppContext) {
  app.post(
    "/sessions/:id/chat",
    {
      sse: { kind: "manual" },
      schema: { params: SessionParams, body: ChatBody },
      // The message posted back holds every tool output of its run so far (see README, useChat).
      bodyLimit: ctx.config.CHAT_BODY_LIMIT_BYTES,
      config: { bodyLimitSetting: "CHAT_BODY_LIMIT_BYTES" },
      // The body is read on one of its key's stream slots (the answer is a stream): the bodies of
      // one key read at once are as many as MAX_STREAMS_PER_KEY, a refusal comes before any is read.
      preParsing: (request, reply, payload, done) => {
        try {
          app.streamQuota.hold(request.owner, reply, { byToken: request.byStreamToken });
          done(null, payload);
        } catch (err) {
          done(err as Error);
        }
      },
    },
    async (request, reply) => {
      const sessionId = request.params.id;
      const owner = request.owner;
      const action = chatAction(request.body);
      // Not kept while the run streams (it may be up to CHAT_BODY_LIMIT_BYTES): the action is all that is read of it.
      (request as { body: unknown }).body = undefined;
      if (action.kind === "start") {
        checkChatInput({ input: action.input, maxBytes: ctx.config.BODY_LIMIT_BYTES });
        // The stream begins with the run's events held since its admission (see AdmissionWatch).
        const admission = new AdmissionWatch(ctx.hub);
        try {
          const { run, created } = await startChatRun(ctx, { sessionId, owner, input: action.input, watch: admission });
          const started = { finished: created ? false : undefined, admission };
          return await streamChat(ctx, reply, { runId: run.id, owner, after: 0, stopCancels: true, ...started });
        } finally {
          admission.release();
        }
      }
      const runId = await ctx.sessions.activeRunId(sessionId, owner);
      // Answers shown on a run that has ended are not another run's (a newer one may be active).
      if (!runId || (action.runId !== undefined && action.runId !== runId)) {
        throw conflict("RUN_FINISHED", "the run these approvals were for has finished; send a new message");
      }
      // Checked whole first: a message with one answer refused applies none of them.
      await ctx.runs.decideEach(runId, owner, action.decisions);
      const from = await continuationOf(ctx.store, runId, action.decisions);
      return streamChat(ctx, reply, {
        runId,
        owner,
        after: from?.after ?? 0,
        awaiting: from?.awaiting,
        stopCancels: true,
      });
    },
  );

  const resume = async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    const runId = await ctx.sessions.activeRunId(request.params.id, request.owner);
    if (!runId) return reply.status(204).send();
    return streamChat(ctx, reply, { runId, owner: request.owner, after: 0, stopCancels: false });
  };
  // `GET .../chat/stream`, and the URL DefaultChatTransport derives by default (`{api}/{chatId}/stream`).
  app.get("/sessions/:id/chat/stream", { sse: { kind: "manual" }, schema: { params: SessionParams } }, resume);
  app.get(
    "/sessions/:id/chat/:chatId/stream",
    { sse: { kind: "manual" }, schema: { params: ChatStreamParams } },
    resume,
  );
}
