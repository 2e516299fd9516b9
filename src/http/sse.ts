import type { FastifyReply } from "fastify";
import type { AppContext } from "../app-context.js";
import { badRequest } from "../errors.js";
import type { AdmissionWatch } from "../runs/admission-watch.js";
import { followRunEvents } from "../runs/event-feed.js";
import { MAX_KEY } from "../store/page.js";
import { CLIENT_GONE } from "./client-gone.js";
import { SseConnection } from "./sse-connection.js";
import { exemptFromWriteDeadline } from "./write-deadline.js";

/** A `Last-Event-ID` the API takes (its pattern in openapi.yaml): 1 to 15 digits, blanks around them. */
const LAST_EVENT_ID = /^\s*([0-9]{1,15})\s*$/;

/**
 * Where a replay starts: `Last-Event-ID` wins over `?after=`; neither means from the first
 * event. A `Last-Event-ID` of anything but LAST_EVENT_ID is refused; one past MAX_KEY (the
 * largest seq an event can have) resumes at MAX_KEY: past every event, as it asks.
 */
export function resumePoint(lastEventId: string | string[] | undefined, after: number | undefined): number {
  if (lastEventId === undefined) return after ?? 0;
  const value = Array.isArray(lastEventId) ? lastEventId[0] : lastEventId;
  const digits = value === undefined ? undefined : LAST_EVENT_ID.exec(value)?.[1];
  if (digits === undefined) {
    throw badRequest("INVALID_LAST_EVENT_ID", "Last-Event-ID must be the id of an event this stream sent (an integer)");
  }
  return Math.min(Number(digits), MAX_KEY);
}

const SERVER_STOPPING = new Error("the server is stopping");
/** The reason a HEAD's stream signal is aborted: its answer, the head alone, has been sent. */
export const HEAD_ANSWERED = new Error("a HEAD is answered by its head alone");

/** The Cache-Control of every event stream (openapi.yaml's SseCacheControl). */
const SSE_CACHE_CONTROL = "no-cache, no-transform";

/** The reconnection delay a stream asks of its client (the SSE `retry:` field). */
export const RETRY_MS = 2000;

/**
 * Whether a watcher resuming after `after` has nothing left to receive: the run has finished
 * and its last event is at or before `after`. Such a request is answered 204, which tells an
 * `EventSource` to stop reconnecting.
 */
export async function nothingLeft(
  store: AppContext["store"],
  { runId, after, finished }: { runId: string; after: number; finished?: boolean },
): Promise<boolean> {
  if (after <= 0 || !(finished ?? (await store.runs.access(runId))?.status === "finished")) return false;
  return after >= (await store.events.lastSeq(runId));
}

/**
 * Makes `reply` (negotiated as SSE) an open stream: its headers go out at once with the
 * `retry:` hint, and it is ended with a last comment when the server stops, or with `cut`
 * its connection is cut then (a client that takes a clean end for the whole answer, as the AI
 * SDK's chat does, sees a broken one and resumes). `closed` aborts when the client goes
 * away or the server stops; it is returned aborted already when the client went away before
 * (CLIENT_GONE), and the caller then streams nothing. The stream holds one of its owner's
 * MAX_STREAMS_PER_KEY slots (usually taken before the handler ran, see limitStreams): over
 * that limit this throws 429 TOO_MANY_STREAMS before anything is written. A HEAD is answered
 * with the stream's head alone and ended at once (its connection then serves the client's next
 * request, and its slot is free): the signal is returned aborted with HEAD_ANSWERED, and the
 * caller streams nothing.
 */
export function openStream(reply: FastifyReply, { cut = false }: { cut?: boolean } = {}): AbortSignal {
  const sse = reply.sse;
  if (!sse) throw new Error("openStream needs an SSE reply");
  reply.server.streamQuota.hold(reply.request.owner, reply, { byToken: reply.request.byStreamToken });
  const closed = new AbortController();
  // A client gone while the request was being answered (an await before this): its response
  // already closed and will not say so again, so nothing is tracked and the signal is aborted.
  if (reply.raw.closed || reply.raw.destroyed) {
    closed.abort(CLIENT_GONE);
    return closed.signal;
  }
  // The SSE plugin answers `Connection: keep-alive` whatever was asked, which keeps a connection
  // the client asked to close (or an HTTP/1.0 one) open past the stream's end, until the
  // keep-alive timeout: a client reading to the close would wait that long for the end.
  if (!reply.raw.shouldKeepAlive) reply.header("connection", "close");
  // Not stored, and not transformed: a proxy that compresses a stream holds its frames back.
  reply.header("cache-control", SSE_CACHE_CONTROL);
  if (reply.request.method === "HEAD") {
    sse.sendHeaders();
    sse.close();
    closed.abort(HEAD_ANSWERED);
    return closed.signal;
  }
  const close = () => closed.abort(CLIENT_GONE);
  sse.onClose(close);
  reply.raw.on("close", close);
  reply.server.openStreams.add(reply, () => {
    closed.abort(SERVER_STOPPING);
    if (cut) reply.raw.destroy();
  });
  // A stream is long-lived by design; a watcher that stops reading costs bounded memory (its
  // feed reads on from the store at its pace) and is not cut by RESPONSE_WRITE_TIMEOUT_MS.
  exemptFromWriteDeadline(reply.raw);
  // Headers are written at once with the retry hint, and go out with the first frames when
  // there are some (the response sends what is written in this tick together; a run's stream
  // holds them a little longer for its stored events, see HEAD_HOLD_MS): a client knows it is
  // connected even before the next event.
  sse.sendHeaders();
  reply.raw.write(`retry: ${RETRY_MS}\n\n`);
  return closed.signal;
}

/**
 * How long a run's stream holds its head for its first events (the stored ones, read at
 * once) to leave with it in one write; a stream with nothing stored to send yet (a watcher
 * resuming at the live end) sends its head alone after this.
 */
const HEAD_HOLD_MS = 20;

/**
 * Streams a run's events over the reply (already negotiated as SSE) until
 * `run.finished` or until the client goes away. A client leaving never cancels the run.
 */
export async function streamRunEvents(
  ctx: Pick<AppContext, "store" | "hub">,
  reply: FastifyReply,
  {
    runId,
    after,
    reasoning = false,
    finished,
    admission,
  }: {
    runId: string;
    after: number;
    reasoning?: boolean;
    /** Whether the stored run had finished when the caller read it (see RunEventsQuery); else read. */
    finished?: boolean;
    /** A watch that saw the run admitted: the stream begins with what it holds (see followRunEvents). */
    admission?: AdmissionWatch;
  },
): Promise<void> {
  const closed = openStream(reply);
  // A HEAD answered by its head, or a client gone before the stream opened: nothing to follow.
  if (closed.aborted) return;
  const sink = new SseConnection(reply.raw);
  sink.holdHead(HEAD_HOLD_MS);
  await cutOnFailure(reply, async () => {
    try {
      await followRunEvents({
        store: ctx.store,
        hub: ctx.hub,
        runId,
        after,
        closed,
        sink,
        reasoning,
        finished,
        admission,
      });
    } finally {
      sink.flush();
      sink.releaseHead();
    }
  });
}

/**
 * Writes an open stream with `write`. A failure before its end (its events cannot be read: the
 * database is unreachable) cuts the stream's connection, as a shutdown cuts a chat's, and is
 * thrown on: the response is not ended, since a clean end says the answer is whole (the AI SDK's
 * chat takes it so; a cut one it shows as `error` and resumes, an EventSource reconnects).
 */
export async function cutOnFailure(reply: FastifyReply, write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (err) {
    // What was written leaves first: the response holds its writes corked until its next tick,
    // or the end of this turn of the event loop (see corkedBatches), then hands them to its socket.
    await new Promise((resolve) => setImmediate(resolve));
    reply.raw.destroy();
    throw err;
  }
}

/**
 * Events that arrive together (one commit writes several) leave in one socket write:
 * the response is corked at the first frame and uncorked once this turn of the event
 * loop is done, or once the frames end, before the response is ended: Node 22's `end()`
 * writes a chunked body's last chunk before the chunks still corked in the response, which
 * the client then never reads (Node 24 writes them first). A batch stays within the
 * response's high-water mark, and a frame larger than it is written uncorked: a write that
 * passes the mark while corked returns false, and Node 22 then never emits the 'drain' its
 * writer waits for (the stream stalled after a tool call's input of 100 KB).
 */
export async function* corkedBatches<T extends string | { data: string }>(
  frames: AsyncIterable<T>,
  raw: FastifyReply["raw"],
): AsyncGenerator<T> {
  const limit = raw.writableHighWaterMark;
  let corked = false;
  let batched = 0;
  const uncork = () => {
    if (!corked) return;
    corked = false;
    batched = 0;
    raw.uncork();
  };
  try {
    for await (const frame of frames) {
      const bytes = frameBytes(frame);
      if (corked && batched + bytes > limit) uncork();
      if (!corked && bytes <= limit) {
        corked = true;
        raw.cork();
        setImmediate(uncork);
      }
      if (corked) batched += bytes;
      yield frame;
    }
  } finally {
    uncork();
  }
}

/** The bytes a frame takes on the wire, its `data: ` prefix and blank line counted for a message. */
function frameBytes(frame: string | { data: string }): number {
  return typeof frame === "string" ? Buffer.byteLength(frame) : Buffer.byteLength(frame.data) + 8;
}
