/** Why a guarded request was stopped: the caller's signal, no output for `idleTimeoutMs`, or output past `maxMs`. */
export type StopCause = "user" | "idle" | "deadline";

export interface RequestGuard {
  /** Aborts when the caller's signal aborts or the idle timer fires; give this to the SDK. */
  readonly signal: AbortSignal;
  /** Resolves (never rejects) once `signal` has aborted, whatever the cause. */
  readonly stopped: Promise<StopCause>;
  /** The first cause that aborted `signal`, or null while it is live. */
  cause(): StopCause | null;
  /**
   * (Re)arms the idle timer: call once the stream starts and on every chunk that brings output.
   * Past `maxMs` since the guard was made, it stops the request instead (`deadline`).
   */
  touch(): void;
  /**
   * From now on the idle timer allows at most `ms` of silence, counted from this call, and
   * `touch()` re-arms it for that long; nothing changes when `ms` is not shorter than it.
   */
  shortenIdle(ms: number): void;
  /**
   * Undoes `shortenIdle`: from now on the idle timer allows `idleTimeoutMs` again, counted
   * from this call; nothing changes when it was not shortened.
   */
  restoreIdle(): void;
  /** Clears the timer and unlinks from the caller's signal. Call exactly once, in `finally`. */
  dispose(): void;
}

/**
 * An AbortController linked to the caller's signal plus an idle timer. The link is a
 * listener removed on dispose, so one long-lived run signal serving many requests does
 * not accumulate listeners. A user abort wins over an idle timeout that fires later. A
 * stream that keeps bringing output, however slowly, is stopped at its first output past
 * `maxMs` (checked when output comes: no second timer; a stream that then brings none is
 * stopped by the idle timer).
 */
export function guardRequest({
  signal,
  idleTimeoutMs,
  maxMs = Number.POSITIVE_INFINITY,
}: {
  signal: AbortSignal;
  idleTimeoutMs: number;
  maxMs?: number;
}): RequestGuard {
  const deadline = performance.now() + maxMs;
  let idleMs = idleTimeoutMs;
  const controller = new AbortController();
  let stopCause: StopCause | null = null;
  let timer: NodeJS.Timeout | undefined;
  let resolveStopped: (cause: StopCause) => void = () => {};
  const stopped = new Promise<StopCause>((resolve) => {
    resolveStopped = resolve;
  });

  const stop = (cause: StopCause) => {
    if (stopCause !== null) return;
    stopCause = cause;
    if (timer) clearTimeout(timer);
    controller.abort();
    resolveStopped(cause);
  };
  const onUserAbort = () => stop("user");
  /** The idle timer set to `ms`, counted from now. */
  const rearm = (ms: number) => {
    idleMs = ms;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => stop("idle"), idleMs);
  };

  if (signal.aborted) stop("user");
  else signal.addEventListener("abort", onUserAbort, { once: true });

  return {
    signal: controller.signal,
    stopped,
    cause: () => stopCause,
    touch() {
      if (stopCause !== null) return;
      if (performance.now() > deadline) return stop("deadline");
      // Re-arming the one timer in place: this runs on every chunk of the stream.
      if (timer) timer.refresh();
      else timer = setTimeout(() => stop("idle"), idleMs);
    },
    shortenIdle(ms) {
      if (stopCause !== null || ms >= idleMs) return;
      rearm(ms);
    },
    restoreIdle() {
      if (stopCause !== null || idleMs === idleTimeoutMs) return;
      rearm(idleTimeoutMs);
    },
    dispose() {
      if (timer) clearTimeout(timer);
      signal.removeEventListener("abort", onUserAbort);
    },
  };
}
