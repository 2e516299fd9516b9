import type { FastifyReply } from "fastify";
import type { AppContext } from "../app-context.js";
import { badRequest } from "../errors.js";
import { runEventStream } from "../runs/event-stream.js";

/**
 * Where a replay starts: `Last-Event-ID` wins over `?after=`; neither means from
 * the first event. Anything but a non-negative integer is refused.
 */
export function resumePoint(lastEventId: string | string[] | undefined, after: number | undefined): number {
  if (lastEventId === undefined) return after ?? 0;
  const value = Array.isArray(lastEventId) ? lastEventId[0] : lastEventId;
  if (value === undefined || !/^\d{1,15}$/.test(value.trim())) {
    throw badRequest("INVALID_LAST_EVENT_ID", "Last-Event-ID must be the id of an event this stream sent (an integer)");
  }
  return Number(value.trim());
}

const CLIENT_GONE = new Error("the client went away");

/**
 * Streams a run's events over the reply (already negotiated as SSE) until
 * `run.finished` or until the client goes away. A client leaving never cancels the run.
 */
export async function streamRunEvents(
  ctx: Pick<AppContext, "store" | "hub">,
  reply: FastifyReply,
  { runId, after }: { runId: string; after: number },
): Promise<void> {
  const sse = reply.sse;
  if (!sse) throw new Error("streamRunEvents needs an SSE reply");
  const closed = new AbortController();
  const close = () => closed.abort(CLIENT_GONE);
  sse.onClose(close);
  reply.raw.on("close", close);
  // Headers go out at once, with the first frames when there are some (they are written
  // when this turn of the event loop ends), else alone: a client knows it is connected even
  // before the next event.
  sse.sendHeaders();
  setTimeout(() => {
    // `headersSent` is already true once the head is built; flushing after it went out is a no-op.
    if (!reply.raw.destroyed && !reply.raw.writableEnded) reply.raw.flushHeaders();
  }, 0);
  const frames = runEventStream({ store: ctx.store, hub: ctx.hub, runId, after, closed: closed.signal });
  await sse.send(corkedBatches(frames, reply.raw));
}

/**
 * Events that arrive together (one commit writes several) leave in one socket write:
 * the response is corked at the first frame and uncorked once this turn of the event
 * loop is done. Ending the response flushes anything still corked.
 */
async function* corkedBatches<T>(frames: AsyncIterable<T>, raw: FastifyReply["raw"]): AsyncGenerator<T> {
  let corked = false;
  const uncork = () => {
    corked = false;
    raw.uncork();
  };
  for await (const frame of frames) {
    if (!corked) {
      corked = true;
      raw.cork();
      setImmediate(uncork);
    }
    yield frame;
  }
}
