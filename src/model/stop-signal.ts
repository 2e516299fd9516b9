import type { ModelFetch } from "./retry-delay-cap.js";

/**
 * A model request's own stop signal (its guard's: the run's cancel or the idle timer), handed
 * to the fetch beside the SDK's request options rather than as the SDK's `signal`: given one,
 * the SDK composes it with its own by `AbortSignal.any`, whose weak references and
 * finalization registry cost every request (~30 µs and garbage-collector work each, with two
 * model requests in a plain run). Stopping needs the fetch aborted, which this does; openStream
 * stops waiting on the SDK by itself (the SDK then fails the abandoned attempt as a connection
 * error, on its own time).
 */
export interface StopSignalInit {
  stopSignal?: AbortSignal;
}

/**
 * Wraps a fetch so that the request ends when either the SDK's signal (its timeout) or the
 * request's stop signal (`init.stopSignal`) aborts. Both are the one request's own, so their
 * listeners go with them.
 */
export function withStopSignal(fetchImpl: ModelFetch): ModelFetch {
  return (input, init) => {
    const stop = (init as StopSignalInit | undefined)?.stopSignal;
    if (!stop) return fetchImpl(input, init);
    const { stopSignal: _, ...rest } = init as RequestInit & StopSignalInit;
    const sdk = rest.signal;
    if (!sdk) return fetchImpl(input, { ...rest, signal: stop });
    const either = new AbortController();
    if (stop.aborted || sdk.aborted) either.abort(stop.aborted ? stop.reason : sdk.reason);
    else {
      const abortBy = (source: AbortSignal) => () => either.abort(source.reason);
      stop.addEventListener("abort", abortBy(stop), { once: true });
      sdk.addEventListener("abort", abortBy(sdk), { once: true });
    }
    return fetchImpl(input, { ...rest, signal: either.signal });
  };
}
