/**
 * `promise`, or a rejection with `signal`'s reason once it aborts first (at once if it has).
 * The abort listener goes when either settles; what `promise` keeps for this (until it
 * settles, as a run's end does) holds only the settled outcome, not the caller waiting.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
