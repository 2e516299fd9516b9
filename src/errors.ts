/**
 * Errors with a stable `code` that the HTTP layer maps to a status, in one place.
 * Anything else that is thrown is an internal error: logged, answered 500 without details.
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "AppError";
  }
}

export const notFound = (what: string, id: string): AppError =>
  new AppError("NOT_FOUND", `${what} ${id} not found`, 404, { [what]: id });

export const sessionBusy = (sessionId: string, runId: string): AppError =>
  new AppError("SESSION_BUSY", `session ${sessionId} already has an active run: ${runId}`, 409, { runId });

/** 409: a DELETE of the session found a run of it it could not end (`runId`, null when it ended since). */
export const sessionRunNotEnded = (sessionId: string, runId: string | null): AppError =>
  new AppError(
    "SESSION_BUSY",
    `session ${sessionId} still has an unfinished run${runId ? ` (${runId})` : ""} that could not be ended; retry the delete later`,
    409,
    { runId },
  );

/** 429: the server's limit (MAX_CONCURRENT_RUNS) or the caller's key's (MAX_RUNS_PER_KEY) is reached. */
export const tooManyRuns = (limit: number, retryAfterSeconds: number, scope: "server" | "key" = "server"): AppError =>
  new AppError(
    "TOO_MANY_RUNS",
    scope === "server"
      ? `the server is running its maximum of ${limit} concurrent runs; retry later`
      : `this API key already has its maximum of ${limit} runs in progress; retry when one has finished`,
    429,
    { limit, scope },
    { "retry-after": String(retryAfterSeconds) },
  );

/** Whether `err` is the server's own limit (MAX_CONCURRENT_RUNS) refusing a run, not the key's. */
export const isServerFull = (err: unknown): boolean =>
  err instanceof AppError &&
  err.code === "TOO_MANY_RUNS" &&
  (err.details as { scope?: string } | undefined)?.scope === "server";

/** 429: the caller's key keeps its maximum of sessions (MAX_SESSIONS_PER_KEY); deleting one frees a place. */
export const tooManySessions = (limit: number): AppError =>
  new AppError(
    "TOO_MANY_SESSIONS",
    `this API key already has its maximum of ${limit} sessions; delete one to create another`,
    429,
    { limit, scope: "key" },
  );

/**
 * 429: the caller's key holds its maximum of open streams and waits (MAX_STREAMS_PER_KEY, `limit`)
 * on this instance (scope `key`); or, for a stream opened with a stream token, the key's stream
 * tokens hold their share of those slots (`tokenLimit`, scope `stream-token`) while the key
 * itself may still have some free. One of them closing frees a slot.
 */
export const tooManyStreams = ({
  limit,
  retryAfterSeconds,
  tokenLimit,
}: {
  limit: number;
  retryAfterSeconds: number;
  /** Set when the refused stream was opened with a stream token and the tokens' share is used up. */
  tokenLimit?: number;
}): AppError =>
  new AppError(
    "TOO_MANY_STREAMS",
    tokenLimit === undefined
      ? `this API key already holds its maximum of ${limit} open event streams and waits (MAX_STREAMS_PER_KEY); close one and retry`
      : `the stream tokens of this API key already hold their share of its open event streams: ${tokenLimit} of MAX_STREAMS_PER_KEY=${limit}; close a stream opened with a stream token, or use the API key itself`,
    429,
    tokenLimit === undefined ? { limit, scope: "key" } : { limit, scope: "stream-token", tokenLimit },
    { "retry-after": String(retryAfterSeconds) },
  );

/** 429: the run already holds its maximum of steered inputs not yet taken; retry once it has taken them. */
export const tooManyInputs = (limit: number, runId: string): AppError =>
  new AppError(
    "TOO_MANY_INPUTS",
    `run ${runId} already has its maximum of ${limit} steered inputs waiting to be taken; retry once it has taken them`,
    429,
    { limit, runId },
    { "retry-after": "1" },
  );

/**
 * 503: the server holds its maximum of connections (MAX_CONNECTIONS); this one came over it and
 * is closed once answered.
 */
export const tooManyConnections = (retryAfterSeconds: number): AppError =>
  new AppError(
    "TOO_MANY_CONNECTIONS",
    "the server holds its maximum of connections at once (MAX_CONNECTIONS); retry later",
    503,
    undefined,
    { "retry-after": String(retryAfterSeconds), connection: "close" },
  );

export const conflict = (code: string, message: string, details?: unknown): AppError =>
  new AppError(code, message, 409, details);

export const badRequest = (code: string, message: string, details?: unknown): AppError =>
  new AppError(code, message, 400, details);

/** 400: a list cursor this API did not give. */
export const invalidCursor = (): AppError => badRequest("INVALID_CURSOR", "cursor is not one this API gave");

/**
 * 503: the server is stopping; a run left for the restart continues there. With `runId`: the
 * answer a wait for that run (already stored) gets: it names the run, which goes on (a retry
 * would start another).
 */
export const shuttingDown = (runId?: string): AppError =>
  new AppError(
    "SHUTTING_DOWN",
    runId === undefined
      ? "the server is shutting down; retry after the restart or on another instance"
      : `the server is shutting down; run ${runId} goes on after the restart or on another instance: follow it at /runs/${runId} instead of starting it again`,
    503,
    runId === undefined ? undefined : { runId },
    // The connection too: a proxy's next request on it would be refused the same way.
    { "retry-after": "5", connection: "close" },
  );

/**
 * 503: WORKSPACE_ROOT resolves elsewhere than at the server's start, where the tools work; no
 * session is created until it leads back there or the server is restarted.
 */
export const workspaceRootMoved = (message: string): AppError =>
  new AppError("WORKSPACE_ROOT_MOVED", message, 503, undefined, { "retry-after": "30" });

export const unavailable = (code: string, message: string): AppError => new AppError(code, message, 503);
