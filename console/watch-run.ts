import { api, HttpError, key } from "./api.js";
import { runPath } from "./paths.js";
import { EVENT_TYPES, type RunEvent } from "./types.js";

/** The wait before reopening a stream that closed, doubled at each failure in a row, up to RETRY_MAX_MS. */
export const RETRY_FIRST_MS = 1000;
export const RETRY_MAX_MS = 8000;

/** A stream-token refusal that retrying will not change: the run is gone, the key refused. */
const final = (err: unknown) =>
  err instanceof HttpError && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;

/**
 * A run's events, from the first, with EventSource (which resumes with Last-Event-ID by
 * itself, also across a server restart). With an API key the URL carries a stream token;
 * when the token has expired (the reconnect is refused), a new one is fetched and the stream
 * reopened after the last event seen. A stream that closed, or a token request that failed
 * (a proxy's 502 while the server restarts), is tried again after RETRY_FIRST_MS, doubled
 * at each failure in a row up to RETRY_MAX_MS, until the run finishes or watching stops;
 * only a refusal for good (4xx: the run gone, the key refused) ends it, `disconnected`: of
 * the stream token, or, a stream having closed (which EventSource gives no status for), of
 * the run itself, asked for once before the stream is opened again.
 * Returns a function that stops watching: once called, no stream is opened and nothing more
 * is reported.
 */
export function watchRun(runId: string, onEvent: (event: RunEvent) => void, onState: (state: string) => void) {
  let lastSeq = 0;
  let source: EventSource | null = null;
  let stopped = false;
  let retryMs = RETRY_FIRST_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const retry = () => {
    if (stopped) return;
    onState("reconnecting");
    timer = setTimeout(() => void open(), retryMs);
    retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
  };
  const open = async () => {
    if (stopped) return;
    const path = runPath(runId);
    let url = `${path}/events?after=${lastSeq}`;
    if (key.get()) {
      let token: string;
      try {
        ({ token } = await api("POST", `${path}/stream-token`));
      } catch (err) {
        if (stopped) return;
        if (final(err)) onState(`disconnected: ${(err as Error).message}`);
        else retry();
        return;
      }
      // Stopped while the token was on its way (another session opened): nothing is opened.
      if (stopped) return;
      url += `&token=${encodeURIComponent(token)}`;
    }
    const es = new EventSource(url);
    source = es;
    es.onopen = () => {
      retryMs = RETRY_FIRST_MS;
      onState("live");
    };
    es.onerror = () => {
      if (stopped) return;
      // Closed: refused (an expired token, the run gone), or ended with 204: unless the run is
      // gone for good, open again after what was seen.
      if (es.readyState === EventSource.CLOSED) void goneOrRetry();
      else onState("reconnecting");
    };
    for (const type of EVENT_TYPES) {
      es.addEventListener(type, (message) => {
        const event = JSON.parse((message as MessageEvent).data) as RunEvent;
        if (stopped || event.seq <= lastSeq) return;
        lastSeq = event.seq;
        onEvent(event);
        if (event.type === "run.finished") stop();
      });
    }
  };
  const goneOrRetry = async () => {
    try {
      await api("GET", runPath(runId));
    } catch (err) {
      if (stopped) return;
      if (final(err)) {
        onState(`disconnected: ${(err as Error).message}`);
        return;
      }
    }
    retry();
  };
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    source?.close();
  };
  void open();
  return stop;
}
