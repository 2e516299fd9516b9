/** The console's calls to the server: same origin, the tab's API key when there is one. */
const KEY_STORAGE = "agent-server-key";

export const key = {
  get: (): string | null => sessionStorage.getItem(KEY_STORAGE),
  set: (value: string) => sessionStorage.setItem(KEY_STORAGE, value),
  clear: () => sessionStorage.removeItem(KEY_STORAGE),
};

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the console reads the API's JSON as documented in openapi.yaml.
export async function api(method: string, path: string, body?: unknown): Promise<any> {
  const headers: Record<string, string> = {};
  const bearer = key.get();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) throw new HttpError(res.status, json?.error?.code ?? "HTTP", json?.error?.message ?? res.statusText);
  return json;
}

/**
 * A run's events, from the first, with EventSource (which resumes with Last-Event-ID by
 * itself, also across a server restart). With an API key the URL carries a stream token;
 * when the token has expired (the reconnect is refused), a new one is fetched and the stream
 * reopened after the last event seen. Returns a function that stops watching.
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
        if (event.seq <= lastSeq) return;
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

const EVENT_TYPES = [
  "run.started",
  "turn.started",
  "text.delta",
  "message",
  "approval.requested",
  "approval.resolved",
  "tool.started",
  "run.finished",
] as const;

export interface Message {
  id: string;
  runId: string;
  role: "user" | "assistant" | "tool";
  content: string;
  toolCalls?: { id: string; name: string; input: string }[];
  toolCallId?: string;
  isError?: boolean;
}

export type RunEvent = { runId: string; seq: number; type: (typeof EVENT_TYPES)[number] } & (
  | { type: "run.started" | "tool.started" }
  | { type: "turn.started"; turn: number }
  | { type: "text.delta"; text: string }
  | { type: "message"; message: Message }
  | { type: "approval.requested"; toolCallId: string; tool: string; input: unknown; reason: string }
  | { type: "approval.resolved"; toolCallId: string; decision: string }
  | {
      type: "run.finished";
      run: { stopReason: string; stopDetail?: string | null; error: { message: string } | null };
    }
);
