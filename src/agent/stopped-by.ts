/**
 * Whether `err`, thrown by work that was given `signal`, is that work reporting the signal's
 * stop: the signal has fired and `err` is its reason, an error caused by it, or an AbortError
 * (how fetch, timers, streams and fs report an abort). Any other error is the work's own
 * failure, reported as such even when it came after the signal fired.
 */
export function stoppedBy(err: unknown, signal: AbortSignal): boolean {
  if (!signal.aborted) return false;
  if (err === signal.reason) return true;
  return err instanceof Error && (err.name === "AbortError" || err.cause === signal.reason);
}
