import { messageOf } from "../message-of.js";
import { MAX_REFUSAL_BYTES, readBoundedText } from "./bounded-read.js";
import { CliError } from "./cli-error.js";
import { EXIT, type ExitCode } from "./exit-codes.js";
import type { Target } from "./target.js";
import { urlSegment } from "./url-segment.js";
import { ErrorEnvelope } from "./wire.js";

/** A server's refusal, as read from the response. */
export interface Refusal {
  status: number;
  /** The error envelope, or null when the body was not one. */
  envelope: ErrorEnvelope | null;
  retryAfter: string | null;
  /** What the client asked, e.g. `POST /sessions`. */
  request: string;
}

/** Reads a non-2xx response into a `Refusal` (a body past MAX_REFUSAL_BYTES is not an envelope). */
export async function readRefusal(response: Response, request: string): Promise<Refusal> {
  const text = (await readBoundedText(response.body, MAX_REFUSAL_BYTES).catch(() => null)) ?? "";
  let envelope: ErrorEnvelope | null = null;
  try {
    const parsed = ErrorEnvelope.safeParse(JSON.parse(text));
    if (parsed.success) envelope = parsed.data;
  } catch {
    // Not JSON: a proxy or something that is not an agent server answered.
  }
  return { status: response.status, envelope, retryAfter: response.headers.get("retry-after"), request };
}

const detail = (envelope: ErrorEnvelope | null, name: string): string | null => {
  const details = envelope?.error.details;
  if (typeof details !== "object" || details === null) return null;
  const value = (details as Record<string, unknown>)[name];
  return typeof value === "string" ? value : null;
};

/** What a proxy answers for a server that is away or too slow (without the server's error envelope). */
const GATEWAY_STATUSES = new Set([502, 503, 504]);

/**
 * The agent server's 503 codes for a state that passes by itself (it is stopping, its database
 * is away, it holds its maximum of connections): retry later, exit 69 (EX_UNAVAILABLE). Any
 * other 503 (WORKSPACE_ROOT_MOVED, which needs its operator; a proxy's, without the server's
 * error) is a failure of the server, exit 70.
 */
const PASSING_503 = new Set(["SHUTTING_DOWN", "STORAGE_UNAVAILABLE", "TOO_MANY_CONNECTIONS"]);

/**
 * One line that says what the server refused and what to do about it, with its exit code.
 * A 502/503/504 that is not the server's own (no error envelope) came from a proxy, which may
 * have passed the request on: `maybeDone`.
 */
export function refusalError(refusal: Refusal, target: Target): CliError {
  const { status } = refusal;
  const [message, exitCode] = explain(refusal, target);
  // 429, 503 and other 5xx (a restarting server, a proxy in front of it) may pass.
  const retryable = status === 429 || status >= 500;
  const maybeDone = refusal.envelope === null && GATEWAY_STATUSES.has(status);
  return new CliError(message, exitCode, { retryable, status, maybeDone });
}

function explain({ status, envelope, retryAfter, request }: Refusal, target: Target): [string, ExitCode] {
  const code = envelope?.error.code;
  const said = envelope ? `${status} ${envelope.error.code}: ${envelope.error.message}` : `${status}`;
  if (status === 401) {
    return target.apiKey === null
      ? [`the server wants an API key (${status}): set AGENT_API_KEY to one of its AGENT_API_KEYS`, EXIT.unauthorized]
      : [`the server refused the key in AGENT_API_KEY (${status}): use one of its AGENT_API_KEYS`, EXIT.unauthorized];
  }
  if (status === 403) {
    // Not the key (a missing or unknown one is 401): the server's own words say what.
    return [`the server forbids ${request} (${said})`, EXIT.unauthorized];
  }
  if (status === 409 && code === "SESSION_BUSY") {
    const runId = detail(envelope, "runId");
    const cancel =
      runId === null ? "" : ` (${curlCommand(target, `-X DELETE ${target.baseUrl}/runs/${urlSegment(runId)}`)})`;
    return [
      `the session already has an active run, ${runId ?? "?"} (409 SESSION_BUSY): wait for it to end, cancel it${cancel}, or leave out --session to start in a new session`,
      EXIT.busy,
    ];
  }
  if (status === 429 || (status === 503 && code !== undefined && PASSING_503.has(code))) {
    const wait = retryAfter && /^\d+$/.test(retryAfter) ? `in ${retryAfter} s` : "later";
    return [`the server cannot take this request now (${said}): retry ${wait}`, EXIT.retryLater];
  }
  const session = detail(envelope, "session");
  if (status === 404 && code === "NOT_FOUND" && session) {
    return [
      `no session ${session} on this server (404): check --session, or leave it out to start a new session`,
      EXIT.server,
    ];
  }
  if (!envelope && GATEWAY_STATUSES.has(status)) {
    return [
      `${request} answered ${status} without an agent server's error: a proxy in front of ${target.baseUrl} found its server away or too slow`,
      EXIT.server,
    ];
  }
  if (!envelope) {
    return [
      `${request} answered ${status} without an agent server's error: is AGENT_URL (${target.baseUrl}) an agent server?`,
      EXIT.server,
    ];
  }
  return [`${request} was refused (${said})`, EXIT.server];
}

/**
 * A curl command line with `args` for the user to type, with the key's header when the client
 * has one (named by its variable, never printed). An id of the server's in `args` is put
 * there through `urlSegment`: the line is pasted into a shell.
 */
export function curlCommand(target: Target, args: string): string {
  return target.apiKey === null ? `curl ${args}` : `curl -H "Authorization: Bearer $AGENT_API_KEY" ${args}`;
}

/**
 * Codes of a connection that broke after the request was sent (or while it was): the server
 * may have got it and done it. Any other failure (ECONNREFUSED, ENOTFOUND...) sent nothing.
 */
const BROKEN_AFTER_SENDING = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

/**
 * The network failure behind a failed fetch of `request`, in a line that says where the
 * client looked: a server to start when nothing was sent; `maybeDone` when the connection
 * broke once the request was on its way.
 */
export function unreachableError({
  error,
  target,
  request,
}: {
  error: unknown;
  target: Target;
  request: string;
}): CliError {
  if (causes(error).some((cause) => cause.message === "bad port")) {
    // fetch refuses some ports outright (6000, 6666-6669, 10080...), whatever listens there.
    return new CliError(
      `this client cannot connect to the port of ${target.baseUrl}: fetch refuses it (a port browsers block); run the server on another port`,
      EXIT.config,
    );
  }
  if (causes(error).some((cause) => BROKEN_AFTER_SENDING.has(String((cause as Error & { code?: unknown }).code)))) {
    return new CliError(
      `${request}: the connection to the server at ${target.baseUrl} broke before its answer (${networkReason(error)})`,
      EXIT.unreachable,
      { retryable: true, maybeDone: true },
    );
  }
  return new CliError(
    `cannot reach the server at ${target.baseUrl} (${networkReason(error)}): start it (npm start) or set AGENT_URL to where it listens`,
    EXIT.unreachable,
    { retryable: true },
  );
}

/** `error` and its causes, the first few. */
function causes(error: unknown): Error[] {
  const found: Error[] = [];
  for (let cause = error; found.length < 4 && cause instanceof Error; cause = cause.cause) found.push(cause);
  return found;
}

/**
 * `ECONNREFUSED`, `ENOTFOUND`... from undici's `fetch failed` and its causes; without such a
 * code, the message of the innermost cause (`other side closed` rather than `fetch failed`).
 */
export function networkReason(error: unknown): string {
  let cause: unknown = error;
  let innermost: unknown = error;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++) {
    innermost = cause;
    const code = (cause as Error & { code?: unknown }).code;
    if (typeof code === "string" && !code.startsWith("UND_ERR_") && code !== "ABORT_ERR") return code;
    if (cause instanceof AggregateError && cause.errors[0] instanceof Error) cause = cause.errors[0];
    else cause = cause.cause;
  }
  return messageOf(innermost);
}
