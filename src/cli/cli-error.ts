import type { ExitCode } from "./exit-codes.js";

/**
 * A failure the client reports as one line on stderr (what happened and what to do)
 * before it exits with `exitCode`. Anything else thrown is a bug of the client.
 * `retryable`: the same request may succeed later (the server is away, full or restarting);
 * `status`: the HTTP status of the server's refusal, if it answered; `cutOff`: the request
 * reached the server, whose answer broke off (what it asked may have been done).
 */
export class CliError extends Error {
  readonly retryable: boolean;
  readonly status: number | null;
  readonly cutOff: boolean;

  constructor(
    message: string,
    readonly exitCode: ExitCode,
    {
      retryable = false,
      status = null,
      cutOff = false,
    }: { retryable?: boolean; status?: number | null; cutOff?: boolean } = {},
  ) {
    super(message);
    this.name = "CliError";
    this.retryable = retryable;
    this.status = status;
    this.cutOff = cutOff;
  }
}
