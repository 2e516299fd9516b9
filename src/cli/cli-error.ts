import type { ExitCode } from "./exit-codes.js";

/**
 * A failure the client reports as one line on stderr (what happened and what to do)
 * before it exits with `exitCode`. Anything else thrown is a bug of the client.
 * `retryable`: the same request may succeed later (the server is away, full or restarting);
 * `status`: the HTTP status of the server's refusal, if it answered; `maybeDone`: the request
 * may have reached the server and been done, its answer lost (cut off, the connection broken
 * after it was sent, or a proxy's 502/503/504 in its place).
 */
export class CliError extends Error {
  readonly retryable: boolean;
  readonly status: number | null;
  readonly maybeDone: boolean;

  constructor(
    message: string,
    readonly exitCode: ExitCode,
    {
      retryable = false,
      status = null,
      maybeDone = false,
    }: { retryable?: boolean; status?: number | null; maybeDone?: boolean } = {},
  ) {
    super(message);
    this.name = "CliError";
    this.retryable = retryable;
    this.status = status;
    this.maybeDone = maybeDone;
  }
}
