import cors from "@fastify/cors";
import { fastifySSE } from "@fastify/sse";
import Fastify, { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { Logger } from "pino";
import approvalRoutes from "../routes/approvals.js";
import chatRoutes from "../routes/chat.js";
import consoleRoutes from "../routes/console.js";
import eventRoutes from "../routes/events.js";
import healthRoutes from "../routes/health.js";
import metricsRoutes from "../routes/metrics.js";
import openapiRoutes from "../routes/openapi.js";
import runRoutes from "../routes/runs.js";
import sessionRoutes from "../routes/sessions.js";
import toolRoutes from "../routes/tools.js";
import webhookSecretRoutes from "../routes/webhook-secret.js";
import type { App, AppContext } from "./app-context.js";
import { AppError } from "./errors.js";
import { letAnswersEnd } from "./http/answers-in-flight.js";
import { clientErrorHandler } from "./http/client-error.js";
import { closeByDeadline } from "./http/close-by.js";
import { capConnections, OVER_CAP_SLOTS } from "./http/connection-cap.js";
import { connectionTimeouts } from "./http/connection-timeouts.js";
import { CONSOLE_ROUTES } from "./http/console.js";
import { errorHandler, notFoundHandler } from "./http/error-handler.js";
import { guardHosts } from "./http/host-guard.js";
import { charsetRefused, foreignCharset } from "./http/json-charset.js";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./http/json-depth.js";
import { logUrl } from "./http/log-url.js";
import { trackOpenStreams } from "./http/open-streams.js";
import { answerOverCap } from "./http/over-cap.js";
import { oneAnswerAtATime } from "./http/pipelining.js";
import { prototypeKeyIn, prototypeKeyRefused } from "./http/prototype-keys.js";
import { schemaController } from "./http/schema-compilers.js";
import { MAX_PATH_PARAM_LENGTH } from "./http/schemas.js";
import { limitStreams, StreamQuota } from "./http/stream-quota.js";
import { streamTokenOwner } from "./http/stream-tokens.js";
import { cutStalledAnswers } from "./http/write-deadline.js";
import { newId } from "./ids.js";

/**
 * Routes answered without a key: decided by the route the request matched (its
 * `routeOptions.url`), never by the raw target, which an absolute-form request
 * (`GET http://host/healthz`, RFC 9112 3.2.2) writes otherwise; a request no route takes is not open.
 */
const OPEN_ROUTES = new Set(["/healthz", "/readyz"]);

/** Whether a request's head announces a body (a length above zero, or a chunked one). */
function declaresBody(headers: { "content-length"?: string; "transfer-encoding"?: string }): boolean {
  return headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? 0) > 0;
}

/** Builds the HTTP app (it does not listen): plugins, auth, error handling, routes. */
export async function buildApp(ctx: AppContext, logger: Logger): Promise<App> {
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: ctx.config.BODY_LIMIT_BYTES,
    genReqId: () => newId("req"),
    // Every path parameter the API documents fits (Fastify's default is 100).
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    schemaController,
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors: (error, request, reply) => {
      void (reply as FastifyReply)
        .code(400)
        .header("x-request-id", request.id)
        .send({ error: { code: "BAD_REQUEST", message: error.message } });
    },
    forceCloseConnections: true,
    clientErrorHandler: clientErrorHandler(logger),
    ...connectionTimeouts(ctx.config),
  }).withTypeProvider<ZodTypeProvider>();
  // Connections from every client together stop at MAX_CONNECTIONS, below the descriptors the
  // process may open: a flood of them cannot starve the runs in flight of theirs. A few more
  // are let in to be answered (answerOverCap below) and closed.
  const overCap = capConnections(app.server, ctx.config.MAX_CONNECTIONS, logger, {
    overCapSlots: OVER_CAP_SLOTS,
    onOverCap: (fact) => ctx.metrics.connectionOverCap(fact),
  });
  // An answer its client does not take is cut after RESPONSE_WRITE_TIMEOUT_MS without progress,
  // and a connection's pipelined requests are answered one at a time: a client that reads
  // nothing holds at most one answer, for a bounded time (event streams and waits are not cut).
  cutStalledAnswers(app.server, ctx.config.RESPONSE_WRITE_TIMEOUT_MS, logger);
  oneAnswerAtATime(app);
  // Bodies are JSON; anything else is 415, not a string that fails validation.
  app.removeContentTypeParser("text/plain");
  // An empty body is no body, whatever the Content-Type (clients often send it on every
  // request): routes without a body still work, and a required body fails validation. A body
  // is read as UTF-8: one declared in another charset is 415, not read as other text.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    const charset = text === "" ? null : foreignCharset(request.headers["content-type"]);
    if (text === "") done(null, undefined);
    else if (charset !== null) done(charsetRefused(charset), undefined);
    else if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
      done(new AppError("INVALID_BODY", `the JSON body nests deeper than ${MAX_JSON_DEPTH} levels`, 400), undefined);
    } else {
      // Valid JSON the parser refuses for a prototype key is told as such, not as invalid JSON.
      parseJson(request, text, (err, parsed) => {
        const key = err ? prototypeKeyIn(text) : null;
        done(key ? prototypeKeyRefused(key) : err, parsed);
      });
    }
  });
  app.setErrorHandler(errorHandler);
  // The deadline the closing stages share (see app.closeBy): the hooks below ask for it.
  const closing = closeByDeadline(app);
  // Stopped with the server, before the store closes: a send in flight is awaited, the
  // spans of runs are exported; each independent of the other, so at once.
  app.addHook("onClose", async () => {
    ctx.peers?.stop();
    await Promise.all([ctx.webhooks.stop(closing()), ctx.tracing?.shutdown(closing())]);
  });
  app.setNotFoundHandler(notFoundHandler);
  app.decorateRequest("owner", null);
  app.decorateRequest("byStreamToken", false);
  // Every response names its request, as the log line about it does (registered before CORS,
  // whose preflight answers from its own hook).
  // Callback hooks, not async ones, here and below: they run on every request and need no promise.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    done();
  });
  // A request on a connection over MAX_CONNECTIONS: /healthz, or a 503, before anything else runs.
  answerOverCap(app, overCap, { corsOrigins: ctx.config.CORS_ORIGINS });
  // A response sent before the request's body was read (a 401, a 404, a 413...) closes the
  // connection: otherwise the socket stays open waiting for a body that may never come. A
  // request that declares no body has none to wait for, even when it is answered before Node
  // has marked it complete (a refusal from a hook, answered in the tick its head was parsed).
  app.addHook("onSend", (request, reply, payload, done) => {
    if (!request.raw.complete && declaresBody(request.headers)) reply.header("connection", "close");
    done(null, payload);
  });

  // Without keys, a page that re-points its own name at this server (DNS rebinding) would talk
  // to it as its own origin: requests naming such a host are refused (before CORS answers preflights).
  guardHosts(app, {
    enabled: !ctx.apiKeys.enabled,
    configuredHost: ctx.config.HOST,
    names: ctx.config.ALLOWED_HOSTS,
  });

  if (ctx.config.CORS_ORIGINS.length) {
    await app.register(cors, {
      origin: ctx.config.CORS_ORIGINS.includes("*") ? true : ctx.config.CORS_ORIGINS,
      methods: ["GET", "POST", "DELETE", "OPTIONS"],
      allowedHeaders: ["authorization", "content-type", "accept", "last-event-id", "idempotency-key"],
      exposedHeaders: ["retry-after", "x-request-id", "www-authenticate", "location", "idempotent-replayed"],
      maxAge: 600,
    });
  }
  trackOpenStreams(app, closing);
  // After the streams' own preClose: the other answers under way are let end (see letAnswersEnd).
  letAnswersEnd(app, closing);
  ctx.metrics.readFrom({ sseConnections: () => app.openStreams.size });
  // Before the SSE plugin: its handler wrapper runs first and decides whether a request streams.
  limitStreams(app, new StreamQuota(ctx.config.MAX_STREAMS_PER_KEY));
  // Event data is stored as JSON text and sent as it is.
  await app.register(fastifySSE, {
    heartbeatInterval: ctx.sseHeartbeatMs,
    serializer: (data: unknown) => (typeof data === "string" ? data : JSON.stringify(data)),
  });

  // A stream token speaks for its key only while that key is configured (a key removed from
  // AGENT_API_KEYS takes its tokens with it, even under a kept STREAM_TOKEN_SECRET).
  const tokenOwner = (request: FastifyRequest): string | null => {
    const owner = streamTokenOwner(ctx.streamTokens, request);
    return owner !== null && ctx.apiKeys.digestOf(owner) !== null ? owner : null;
  };
  app.addHook("onRequest", (request, reply, done) => {
    if (
      !ctx.apiKeys.enabled ||
      OPEN_ROUTES.has(request.routeOptions.url ?? "") ||
      CONSOLE_ROUTES.has(request.routeOptions.url ?? "") ||
      request.method === "OPTIONS"
    )
      return done();
    const keyOwner = ctx.apiKeys.authenticate(request.headers.authorization);
    const owner = keyOwner ?? tokenOwner(request);
    request.byStreamToken = keyOwner === null && owner !== null;
    if (owner === null) {
      reply.header("www-authenticate", 'Bearer realm="agent-server"');
      return done(
        new AppError("UNAUTHORIZED", "a valid bearer API key is required (Authorization: Bearer <key>)", 401),
      );
    }
    request.owner = owner;
    done();
  });
  app.addHook("onResponse", (request, reply, done) => {
    // The line's fields are not even gathered when the level drops it.
    if (!logger.isLevelEnabled("info")) return done();
    request.log.info(
      {
        method: request.method,
        url: logUrl(request.url),
        statusCode: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        ...routeIds(request.routeOptions.url, request.params),
      },
      "request",
    );
    done();
  });

  for (const routes of [
    healthRoutes,
    openapiRoutes,
    toolRoutes,
    sessionRoutes,
    runRoutes,
    eventRoutes,
    approvalRoutes,
    chatRoutes,
    webhookSecretRoutes,
    consoleRoutes,
    // On METRICS_PORT instead when that is set (see listenForMetrics).
    ...(ctx.config.METRICS_PORT === undefined ? [metricsRoutes] : []),
  ]) {
    routes(app, ctx);
  }
  return app;
}

/** The session or run id a request named, for the log line. */
function routeIds(route: string | undefined, params: unknown): { sessionId?: string; runId?: string } {
  const id = (params as { id?: unknown } | undefined)?.id;
  if (typeof id !== "string" || !route) return {};
  return route.startsWith("/sessions/") ? { sessionId: id } : route.startsWith("/runs/") ? { runId: id } : {};
}
