import { api, key } from "./api.js";
import { EVENT_TYPES, type RunEvent } from "./types.js";

/**
 * A run's events, from the first, with EventSource (which resumes with Last-Event-ID by
 * itself, also across a server restart). With an API key the URL carries a stream token;
 * when the token has expired (the reconnect is refused), a new one is fetched and the stream
 * reopened after the last event seen. Returns a function that stops watching: once called, no
 * stream is opened and nothing more is reported.
 */
export function watchRun(runId: string, onEvent: (event: RunEvent) => void, onState: (state: string) => void) {
  let lastSeq = 0;
  let source: EventSource | null = null;
  let stopped = false;
  const open = async () => {
    if (stopped) return;
    let url = `/runs/${runId}/events?after=${lastSeq}`;
    if (key.get()) {
      const { token } = await api("POST", `/runs/${runId}/stream-token`);
      // Stopped while the token was on its way (another session opened): nothing is opened.
      if (stopped) return;
      url += `&token=${encodeURIComponent(token)}`;
    }
    const es = new EventSource(url);
    source = es;
    es.onopen = () => onState("live");
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED && !stopped) {
        // Refused (an expired token) or ended with 204: open again after what was seen, unless finished.
        onState("reconnecting");
        setTimeout(() => void open().catch(() => onState("disconnected")), 1000);
      } else onState("reconnecting");
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
  const stop = () => {
    stopped = true;
    source?.close();
  };
  void open().catch(() => onState("disconnected"));
  return stop;
}
