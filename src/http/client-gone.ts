import type { FastifyReply } from "fastify";
import { AppError } from "../errors.js";

/**
 * The reason a signal of `clientGone` (and an open stream's, see openStream) aborts with: the
 * client went away. Thrown by a wait it ends, it answers 499 (nginx's "client closed request")
 * to nobody: the connection is gone, and nothing is logged as an error.
 */
export const CLIENT_GONE = new AppError("CLIENT_GONE", "the client went away before the answer", 499);

/**
 * A signal aborted (with CLIENT_GONE) when `reply`'s connection closes before its answer was
 * sent: the client left, or its connection was cut. What waits in the server for that answer
 * (a `?wait=true` start for its run's end, a steer for its input to be taken) stops on it, so
 * it holds the request no longer than its connection (MAX_STREAMS_PER_KEY counts those). A
 * response that closed already, unanswered, gives a signal aborted already.
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const raw = reply.raw;
  if (raw.writableFinished) return new AbortController().signal;
  if (raw.closed || raw.destroyed) return AbortSignal.abort(CLIENT_GONE);
  const gone = new AbortController();
  raw.once("close", () => {
    if (!raw.writableFinished) gone.abort(CLIENT_GONE);
  });
  return gone.signal;
}
