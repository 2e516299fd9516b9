import { messageOf } from "../message-of.js";
import { MAX_REFUSAL_BYTES, readBoundedText } from "./bounded-read.js";
import { CliError } from "./cli-error.js";
import { EXIT, type ExitCode } from "./exit-codes.js";
import type { Target } from "./target.js";
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

/** One line that says what the server refused and what to do about it, with its exit code. */
export function refusalError(refusal: Refusal, target: Target): CliError {
  const { status } = refusal;
  const [message, exitCode] = explain(refusal, target);
  // 429, 503 and other 5xx (a restarting server, a proxy in front of it) may pass.
  const retryable = status === 429 || status >= 500;
  return new CliError(message, exitCode, { retryable, status });
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
    const runId = detail(envelope, "runId") ?? "?";
    return [
      `the session already has an active run, ${runId} (409 SESSION_BUSY): wait for it to end, cancel it (${curlCommand(target, `-X DELETE ${target.baseUrl}/runs/${runId}`)}), or leave out --session to start in a new session`,
      EXIT.busy,
    ];
  }
  if (status === 429 || status === 503) {
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
 * has one (named by its variable, never printed).
 */
export function curlCommand(target: Target, args: string): string {
  return target.apiKey === null ? `curl ${args}` : `curl -H "Authorization: Bearer $AGENT_API_KEY" ${args}`;
}

/** The network failure behind a failed fetch, in a line that says where the client looked. */
export function unreachableError(error: unknown, target: Target): CliError {
  if (causes(error).some((cause) => cause.message === "bad port")) {
    // fetch refuses some ports outright (6000, 6666-6669, 10080...), whatever listens there.
    return new CliError(
      `this client cannot connect to the port of ${target.baseUrl}: fetch refuses it (a port browsers block); run the server on another port`,
      EXIT.config,
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

/** `ECONNREFUSED`, `ENOTFOUND`... from undici's `fetch failed` and its cause. */
export function networkReason(error: unknown): string {
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++) {
    const code = (cause as Error & { code?: unknown }).code;
    if (typeof code === "string" && !code.startsWith("UND_ERR_") && code !== "ABORT_ERR") return code;
    if (cause instanceof AggregateError && cause.errors[0] instanceof Error) cause = cause.errors[0];
    else cause = cause.cause;
  }
  return messageOf(error);
}
