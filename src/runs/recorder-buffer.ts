import type { RunEventBody } from "../domain/run-events.js";
import { isoNow } from "./iso-now.js";

/** The events a run's recorder holds for its next write (see RunRecorder), and its limits. */

/**
 * How long buffered events wait before they are retried while writes are failing. Buffered
 * events otherwise go out once the current turn of the event loop is done (see RunRecorder.buffer).
 */
export const RETRY_DELAY_MS = 10;
/**
 * How long a turn start and a deferred change (a step's trace and stats, made as a turn
 * ends) may wait for the run's next write: the model's first delta, or its reply when it
 * answers at once, usually comes sooner, and then they all go out in one write.
 */
export const NEXT_WRITE_DELAY_MS = 50;
/** A buffer this long is written at once rather than after the delay. */
export const FLUSH_AT = 256;
/**
 * Text deltas buffered together are merged into one event of at most this many characters:
 * they are published together anyway, and a model streaming a token per chunk would
 * otherwise cost a row, a JSON encoding and an SSE frame per token.
 */
const MAX_MERGED_DELTA_CHARS = 1024;
/** While writes fail, at most this many events wait; beyond it the oldest text deltas are dropped. */
const MAX_BUFFERED_WHILE_FAILING = 10_000;

/** An event waiting for the run's next write, with when it happened. */
export interface BufferedEvent {
  body: RunEventBody;
  at: string;
}

/**
 * Adds `body` to `buffered`, merged into the last event when both are deltas of one kind and
 * fit together; true when it was appended. While writes are `failing`, a buffer at the cap
 * first drops its oldest text delta (else its oldest event).
 */
export function addBuffered(buffered: BufferedEvent[], body: RunEventBody, failing: boolean): boolean {
  if (failing && buffered.length >= MAX_BUFFERED_WHILE_FAILING) {
    const oldestDelta = buffered.findIndex((e) => e.body.type === "text.delta");
    buffered.splice(Math.max(oldestDelta, 0), 1);
  }
  const last = buffered.at(-1);
  if (
    (body.type === "text.delta" || body.type === "reasoning.delta") &&
    last?.body.type === body.type &&
    last.body.text.length + body.text.length <= MAX_MERGED_DELTA_CHARS
  ) {
    last.body = { type: body.type, text: last.body.text + body.text };
    return false;
  }
  buffered.push({ body, at: isoNow() });
  return true;
}
