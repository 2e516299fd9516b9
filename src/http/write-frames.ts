import type { FastifyReply } from "fastify";
import { corkedBatches } from "./sse.js";
import { sseData } from "./sse-connection.js";

/**
 * Writes `frames` to an open stream (see openStream) as `data:` messages, in corked batches
 * (see corkedBatches), until they end or `closed` aborts. A write the response cannot take at
 * once waits for it to drain or for `closed`, whichever comes first: a client that stopped
 * reading and then goes away ends the writing at once (its response closes and never drains).
 * Ending early returns `frames` (its `finally` blocks run): nothing more is read from it.
 */
export async function writeFrames({
  frames,
  raw,
  closed,
}: {
  frames: AsyncIterable<{ data: string }>;
  raw: FastifyReply["raw"];
  closed: AbortSignal;
}): Promise<void> {
  for await (const frame of corkedBatches(frames, raw)) {
    if (closed.aborted || raw.destroyed) return;
    if (!raw.write(sseData(frame.data))) await drainedOrClosed(raw, closed);
    if (closed.aborted) return;
  }
}

/** Resolves once `raw` has drained or `closed` aborts. */
function drainedOrClosed(raw: FastifyReply["raw"], closed: AbortSignal): Promise<void> {
  if (closed.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      raw.off("drain", done);
      closed.removeEventListener("abort", done);
      resolve();
    };
    raw.on("drain", done);
    closed.addEventListener("abort", done);
  });
}
