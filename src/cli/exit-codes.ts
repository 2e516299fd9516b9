/**
 * The client's exit codes, one per outcome a script may want to tell apart. A run that
 * finished maps by its stop reason; the rest say why no run could be followed to its end.
 */
export const EXIT = {
  complete: 0,
  error: 1,
  maxTurns: 2,
  /** A guard of the server stopped the run (`loop_detected`, `budget_exhausted`). */
  stoppedByGuard: 3,
  /** Bad command line. */
  usage: 64,
  /** `AGENT_URL`, `AGENT_API_KEY` or `AGENT_MAX_ANSWER_MIB` cannot be used. */
  config: 65,
  /** No server answers at `AGENT_URL`, or it was lost and did not come back. */
  unreachable: 66,
  /** 401/403: no API key, or one the server does not know. */
  unauthorized: 67,
  /** 409 `SESSION_BUSY`: the session already has an active run. */
  busy: 68,
  /** 429, or 503 `SHUTTING_DOWN`, `STORAGE_UNAVAILABLE` or `TOO_MANY_CONNECTIONS`: retry later. */
  retryLater: 69,
  /** Any other answer of the server: unknown session, refused input, a 5xx, not an agent server. */
  server: 70,
  /** The run was cancelled (Ctrl-C, a `DELETE` from elsewhere, a shutdown). */
  aborted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The exit code of a finished run; a stop reason this client does not know counts as an error. */
export function exitCodeForStopReason(stopReason: string | null): ExitCode {
  switch (stopReason) {
    case "complete":
      return EXIT.complete;
    case "max_turns":
      return EXIT.maxTurns;
    case "loop_detected":
    case "budget_exhausted":
      return EXIT.stoppedByGuard;
    case "aborted":
      return EXIT.aborted;
    default:
      return EXIT.error;
  }
}
