import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { AppError } from "../errors.js";
import { StorageError } from "../store/errors.js";

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

const send = (reply: FastifyReply, status: number, body: ErrorBody) => reply.status(status).send(body);

/**
 * The Retry-After of a 503 STORAGE_UNAVAILABLE: the database comes back (a failover, space
 * freed, a lock released) whenever that is; a client retries after it rather than at once.
 */
export const STORAGE_RETRY_AFTER_S = 5;

/** Client errors Fastify raises itself, with the codes clients see. */
const FASTIFY_CODES: Record<string, { status: number; code: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: "BODY_TOO_LARGE" },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: "UNSUPPORTED_MEDIA_TYPE" },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: "INVALID_CONTENT_LENGTH" },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: "INVALID_JSON" },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: "INVALID_JSON" },
};

declare module "fastify" {
  interface FastifyContextConfig {
    /** The setting a route's own `bodyLimit` comes from, named in its 413; default BODY_LIMIT_BYTES. */
    bodyLimitSetting?: string;
  }
}

/** Fastify's message, with what the client should do where Fastify does not say it. */
function clientMessage(err: FastifyError, request: FastifyRequest): string {
  if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
    const setting = request.routeOptions.config.bodyLimitSetting ?? "BODY_LIMIT_BYTES";
    return `the request body is larger than the server accepts (${request.routeOptions.bodyLimit} bytes, ${setting})`;
  }
  if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return `unsupported Content-Type ${JSON.stringify(request.headers["content-type"] ?? "")}: send the body as application/json`;
  }
  return err.message;
}

/**
 * The one place errors become HTTP: typed errors keep their code and status,
 * validation errors are 400 with details, and anything unexpected is logged and
 * answered 500 without internals.
 */
export function errorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (err instanceof AppError) {
    if (err.headers) reply.headers(err.headers);
    return send(reply, err.status, {
      error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: err.details } : {}) },
    });
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const details = err.validation.map((v) => ({
      in: err.validationContext ?? "request",
      path: v.instancePath.replace(/^\//, "").replaceAll("/", ".") || "(root)",
      message: v.message ?? "invalid",
    }));
    const summary = details.map((d) => `${d.in} ${d.path}: ${d.message}`).join("; ");
    return send(reply, 400, { error: { code: "VALIDATION_FAILED", message: summary, details } });
  }
  const known = err.code ? FASTIFY_CODES[err.code] : undefined;
  if (known) return send(reply, known.status, { error: { code: known.code, message: clientMessage(err, request) } });
  if (err instanceof SyntaxError || err.code === "FST_ERR_BAD_URL") {
    return send(reply, 400, { error: { code: "BAD_REQUEST", message: err.message } });
  }
  if (err instanceof StorageError && err.kind !== "corrupt") {
    request.log.error({ err }, "storage unavailable");
    reply.header("retry-after", String(STORAGE_RETRY_AFTER_S));
    return send(reply, 503, {
      error: {
        code: "STORAGE_UNAVAILABLE",
        message: "the database cannot be reached or cannot take writes right now; retry later",
      },
    });
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return send(reply, err.statusCode, { error: { code: "BAD_REQUEST", message: err.message } });
  }
  request.log.error({ err }, "internal error");
  return send(reply, 500, {
    error: { code: "INTERNAL", message: "internal server error", details: { requestId: request.id } },
  });
}

/** Fastify's not-found handler: a request no route takes gets the error envelope (404 NOT_FOUND). */
export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return send(reply, 404, {
    error: { code: "NOT_FOUND", message: `no route ${request.method} ${request.url.split("?")[0]}` },
  });
}
