import { APIError } from "openai";
import type { ModelFailure } from "./classify-error.js";
import { BodyHead, plainAnswerFailure } from "./plain-answer.js";
import { type SseEvent, type SseEventTooLargeError, SseParser } from "./sse-events.js";
import { type StreamAssembler, tooLargeMessage } from "./stream-assembler.js";

/** The largest one stream event may be, whatever the output cap leaves. */
export const MAX_EVENT_BYTES = 8 * 1024 * 1024;
/** Room in an event for what is not reply text: ids, model names, usage, JSON syntax. */
const EVENT_OVERHEAD_BYTES = 64 * 1024;
/** The most bytes JSON may spend on one UTF-16 unit (`\uXXXX`, as Python servers escape). */
const BYTES_PER_CHAR = 6;

export type StreamEnd =
  /** `data: [DONE]` arrived: the upstream ended the stream on purpose. */
  | { ok: true; sawDone: true }
  /**
   * The body ended without `[DONE]`, or its connection failed after a finish_reason arrived:
   * a clean end only if a finish_reason said so.
   */
  | { ok: true; sawDone: false }
  | { ok: false; failure: ModelFailure };

/**
 * Reads a Chat Completions event stream into `assembler` until `[DONE]` (after which nothing
 * is read) or the end of the body. The SDK's own reader hides `[DONE]`, and only knowing it
 * tells a stream that ended cleanly without a finish_reason from a cut connection, so the
 * body is read here. Each event is held to what the output cap still allows (at most
 * {@link MAX_EVENT_BYTES}) while its bytes arrive, before it is parsed. An `error` event or a
 * chunk with an `error` object throws an {@link APIError}, as the SDK would. A failure of the
 * body itself (a cut connection, an abort) is thrown as it comes, unless a finish_reason had
 * already arrived: the reply is then whole, and the failure ends the stream as the body's end
 * would (the caller still checks for an abort). A body that brought no event at all is read
 * as a plain JSON answer: an `{"error": ...}` object is thrown as an {@link APIError} with its
 * status, a whole chat.completion fails the turn (see plainAnswerFailure).
 */
export async function readChatStream({
  body,
  headers,
  assembler,
  maxOutputChars,
  onEvent,
  onReplyEnd,
}: {
  body: AsyncIterable<Uint8Array>;
  headers: Headers;
  assembler: StreamAssembler;
  maxOutputChars: number | undefined;
  /**
   * Called on every event that brings output (text, reasoning or tool calls): the idle timer
   * is re-armed there. Events with none (role-only, usage or empty chunks) do not count, so
   * an upstream sending only those cannot hold a run past the idle timeout. `afterFinish`:
   * the first finish_reason came in an earlier chunk, so it did not end the reply (some
   * upstreams send it early, or on every chunk).
   */
  onEvent: (afterFinish: boolean) => void;
  /**
   * Called on each event that brings no output (the usage chunk, an empty one) once a
   * finish_reason came, the chunk that carried it included, while no output came after that
   * chunk: the reply looks whole, only usage and `[DONE]` should follow. A finish_reason on
   * a chunk that brings output does not call it by itself: some upstreams send it early.
   */
  onReplyEnd: () => void;
}): Promise<StreamEnd> {
  const remaining = () => assembler.remainingChars();
  const maxEventBytes = () => Math.min(MAX_EVENT_BYTES, EVENT_OVERHEAD_BYTES + BYTES_PER_CHAR * remaining());
  const parser = new SseParser(maxEventBytes);
  const events: SseEvent[] = [];
  /** Output came in a chunk after the one with the first finish_reason: that one came early. */
  let finishedEarly = false;
  /** The body's first bytes, until an event came. */
  let head: BodyHead | null = new BodyHead();
  /** The events parsed so far, in order: an end when one ends the stream. */
  const take = (): StreamEnd | null => {
    for (const sse of events) {
      const end = onSse(sse);
      if (end) return end;
    }
    events.length = 0;
    return parser.failure ? tooLarge(parser.failure, maxOutputChars) : null;
  };
  const onSse = (sse: SseEvent): StreamEnd | null => {
    head = null;
    // As the SDK's own reader takes it: `[DONE]` followed by anything (a trailing space, say).
    if (sse.data.startsWith("[DONE]")) return { ok: true, sawDone: true };
    let chunk: unknown;
    try {
      chunk = JSON.parse(sse.data);
    } catch {
      // An error event's text is the upstream's error, JSON or not.
      if (sse.event === "error") throw new APIError(undefined, { message: sse.data }, undefined, headers);
      return bad("the model upstream sent a stream chunk that is not valid JSON");
    }
    const error = (chunk as { error?: unknown } | null)?.error;
    if (sse.event === "error" || (error !== undefined && error !== null)) {
      throw new APIError(undefined, (error ?? chunk) as object, undefined, headers);
    }
    const produced = assembler.producedChars();
    const finishedBefore = assembler.sawFinishReason();
    const accepted = assembler.accept(chunk);
    if (assembler.producedChars() > produced) {
      finishedEarly ||= finishedBefore;
      onEvent(finishedBefore);
    } else if (assembler.sawFinishReason() && !finishedEarly) onReplyEnd();
    if (accepted.ok) return null;
    return {
      ok: false,
      failure: { code: accepted.tooLarge ? "MODEL_OUTPUT_TOO_LARGE" : "MODEL_BAD_RESPONSE", message: accepted.message },
    };
  };
  // The body's chunks parsed synchronously as they come: one async step per chunk, not per event.
  const chunks = body[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await chunks.next();
      } catch (error) {
        if (!assembler.sawFinishReason()) throw error;
        break;
      }
      if (next.done) break;
      head?.add(next.value);
      parser.push(next.value, events);
      const end = take();
      if (end?.ok) {
        // After `[DONE]` the rest of the body is read in the background, not waited for.
        finished = true;
        void drain(chunks);
      }
      if (end) return end;
    }
    finished = true;
  } finally {
    if (!finished) await chunks.return?.();
  }
  parser.end(events);
  const end = take();
  if (end) return end;
  const plain = head === null || parser.failure ? null : plainAnswerFailure(head.text(), headers);
  return plain ? { ok: false, failure: plain } : { ok: true, sawDone: false };
}

/** How much of a body may follow `[DONE]` and still be read to its end. */
const DRAIN_MAX_BYTES = 64 * 1024;
const DRAIN_MAX_MS = 1_000;

/**
 * Reads what follows `[DONE]` (usually nothing but the body's end) so that the connection goes
 * back to the pool; a body that goes on past DRAIN_MAX_BYTES or DRAIN_MAX_MS is given up
 * (destroyed). Never rejects.
 */
async function drain(chunks: AsyncIterator<Uint8Array>): Promise<void> {
  const timer = setTimeout(() => void chunks.return?.().catch(() => {}), DRAIN_MAX_MS);
  let bytes = 0;
  try {
    for (;;) {
      const next = await chunks.next();
      if (next.done) return;
      bytes += next.value.byteLength;
      if (bytes > DRAIN_MAX_BYTES) {
        await chunks.return?.();
        return;
      }
    }
  } catch {
    // A body that failed after [DONE] changes nothing of the reply.
  } finally {
    clearTimeout(timer);
  }
}

function tooLarge(error: SseEventTooLargeError, maxOutputChars: number | undefined): StreamEnd {
  const message =
    error.limit === MAX_EVENT_BYTES
      ? `the model upstream sent one stream event of more than ${MAX_EVENT_BYTES} bytes; it was cut off there and none of the reply was kept`
      : tooLargeMessage(maxOutputChars);
  return { ok: false, failure: { code: "MODEL_OUTPUT_TOO_LARGE", message } };
}

function bad(message: string): StreamEnd {
  return { ok: false, failure: { code: "MODEL_BAD_RESPONSE", message } };
}
