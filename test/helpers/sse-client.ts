import http from "node:http";

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
  /** `data` parsed as JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: event payloads are inspected freely by tests.
  json: any;
}

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Every event received so far. */
  events: SseEvent[];
  /** Comment lines (heartbeats) received so far. */
  comments: string[];
  /** Resolves with the first event (from the start) matching `predicate`. */
  waitFor(predicate: (e: SseEvent) => boolean): Promise<SseEvent>;
  /** Resolves when the server ends the stream; the events received. */
  ended: Promise<SseEvent[]>;
  /** Body text when the answer was not an event stream. */
  body: Promise<string>;
  /** Whether the server ended the response properly (the chunked body terminated), not cut it. */
  complete(): boolean;
  close(): void;
}

/** Opens an SSE request with plain node:http and parses frames as they arrive. */
export function openSse(
  url: string,
  { method = "GET", headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(url, {
      method,
      headers: {
        accept: "text/event-stream",
        ...(data ? { "content-type": "application/json", "content-length": String(data.length) } : {}),
        ...headers,
      },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      const waiters: { predicate: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void }[] = [];
      /** What came since the last whole frame, in pieces; `buffer` is its last piece (or all of it, once joined). */
      let pending: string[] = [];
      let buffer = "";
      let raw = "";
      const dispatch = (block: string) => {
        let event = "message";
        let id: string | undefined;
        const lines: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) {
            comments.push(line.slice(1).trim());
            continue;
          }
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event = value;
          else if (field === "id") id = value;
          else if (field === "data") lines.push(value);
        }
        if (!lines.length) return;
        const text = lines.join("\n");
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        const e: SseEvent = { id, event, data: text, json };
        events.push(e);
        for (const w of [...waiters]) {
          if (w.predicate(e)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(e);
          }
        }
      };
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        raw += chunk;
        // A frame ends at a blank line, looked for only in what just came (and the character
        // before it): a frame of megabytes arriving in many chunks is joined once, not searched
        // again whole at each chunk.
        if (`${buffer.at(-1) ?? ""}${chunk}`.indexOf("\n\n") < 0) {
          pending.push(chunk);
          buffer = chunk;
          return;
        }
        pending.push(chunk);
        buffer = pending.join("");
        pending = [];
        let at = buffer.indexOf("\n\n");
        while (at >= 0) {
          dispatch(buffer.slice(0, at));
          buffer = buffer.slice(at + 2);
          at = buffer.indexOf("\n\n");
        }
        if (buffer !== "") pending.push(buffer);
      });
      const ended = new Promise<SseEvent[]>((done) => {
        res.on("end", () => done(events));
        res.on("close", () => done(events));
        res.on("error", () => done(events));
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        comments,
        ended,
        body: ended.then(() => raw),
        complete: () => res.complete,
        waitFor(predicate) {
          const found = events.find(predicate);
          if (found) return Promise.resolve(found);
          return new Promise((done, fail) => {
            waiters.push({ predicate, resolve: done });
            ended.then(() => {
              const late = events.find(predicate);
              if (late) done(late);
              else
                fail(
                  new Error(`stream ended without the awaited event; got: ${events.map((x) => x.event).join(", ")}`),
                );
            });
          });
        },
        close() {
          req.destroy();
          res.destroy();
        },
      });
    });
    req.end(data);
  });
}
