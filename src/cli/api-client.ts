import type { z } from "zod";
import { MAX_ANSWER_BYTES, mebibytes, readBoundedText } from "./bounded-read.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";
import { networkReason, readRefusal, refusalError, unreachableError } from "./server-errors.js";
import type { Target } from "./target.js";

/**
 * How long a JSON request may take, from sending it to the end of its answer. Every JSON
 * request of the client (create a session, start a run, decide, cancel) is answered at once
 * by a working server; one that trickles its answer or never finishes it is given up.
 */
export const ANSWER_DEADLINE_MS = 60_000;

/**
 * The agent server's HTTP API as the client uses it: JSON requests with the bearer key,
 * every failure turned into a one-line `CliError` (refused, unreachable, not the API, too slow).
 */
export class ApiClient {
  /** The most of one answer read (AGENT_MAX_ANSWER_MIB): a JSON body's bytes, an event's characters. */
  readonly maxAnswerBytes: number;

  constructor(
    readonly target: Target,
    private readonly options: { answerDeadlineMs?: number; maxAnswerBytes?: number } = {},
  ) {
    this.maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  }

  /** A JSON request whose 2xx answer must match `schema` (and be at most maxAnswerBytes). */
  async json<T>({
    method,
    path,
    body,
    schema,
    headers = {},
  }: {
    method: string;
    path: string;
    body?: unknown;
    schema: z.ZodType<T>;
    headers?: Record<string, string>;
  }): Promise<T> {
    const request = `${method} ${path}`;
    const deadlineMs = this.options.answerDeadlineMs ?? ANSWER_DEADLINE_MS;
    const deadline = AbortSignal.timeout(deadlineMs);
    const late = () =>
      new CliError(
        `${request} got no whole answer within ${deadlineMs / 1000} s from the server at ${this.target.baseUrl}`,
        EXIT.unreachable,
      );
    let response: Response;
    let text: string | null;
    try {
      response = await this.send({
        request,
        path,
        init: {
          method,
          headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: deadline,
        },
      });
    } catch (error) {
      throw deadline.aborted ? late() : error;
    }
    try {
      text = await readBoundedText(response.body, this.maxAnswerBytes);
    } catch (error) {
      if (deadline.aborted) throw late();
      // The connection broke while the answer was read: the server went away (retryable), maybe after doing it.
      throw new CliError(
        `${request}: the answer of the server at ${this.target.baseUrl} was cut off (${networkReason(error)})`,
        EXIT.unreachable,
        { retryable: true, maybeDone: true },
      );
    }
    if (text === null) {
      throw new CliError(
        `${request} answered with more than ${mebibytes(this.maxAnswerBytes)}: is AGENT_URL (${this.target.baseUrl}) an agent server?`,
        EXIT.server,
      );
    }
    let parsed: z.ZodSafeParseResult<T> | null = null;
    try {
      parsed = schema.safeParse(JSON.parse(text));
    } catch {
      // Not JSON: reported below.
    }
    if (!parsed?.success) {
      throw new CliError(
        `${request} answered ${response.status} with a body this client does not understand: is AGENT_URL (${this.target.baseUrl}) an agent server?`,
        EXIT.server,
      );
    }
    return parsed.data;
  }

  /**
   * Sends a request and returns its 2xx response (body unread). A refusal is thrown as
   * its `CliError`; a network failure as unreachable, `maybeDone` when the connection broke
   * after the request was sent (or rethrown when `signal` aborted it).
   */
  async send({ request, path, init }: { request: string; path: string; init: RequestInit }): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(this.target.baseUrl + path, {
        ...init,
        headers: { ...this.authorization(), ...(init.headers as Record<string, string>) },
      });
    } catch (error) {
      if (init.signal?.aborted) throw error;
      throw unreachableError({ error, target: this.target, request });
    }
    if (response.ok) return response;
    throw refusalError(await readRefusal(response, request), this.target);
  }

  private authorization(): Record<string, string> {
    return this.target.apiKey === null ? {} : { authorization: `Bearer ${this.target.apiKey}` };
  }
}
