import { Readable } from "node:stream";

/**
 * The most of an error answer's body that is read: enough for any JSON error object a provider
 * sends (an error message quotes at most 300 characters of it anyway).
 */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** A body already in memory, with the `text()` and `json()` the SDK reads an error answer by. */
export type BufferedBody = Readable & { text(): Promise<string>; json(): Promise<unknown> };

/**
 * The first MAX_ERROR_BODY_BYTES of an error answer's body, read now, so that the request's
 * signal (the SDK's per-attempt timeout and the caller's abort) still bounds the reading: the
 * SDK would read the whole body, with no timeout, once the headers have come. A longer body
 * is cut there and destroyed (its connection closed). Rejects with the abort error when
 * `signal` stopped the reading; a body that breaks otherwise (a reset, a proxy cutting it)
 * is what came of it, so the answer keeps its status and the start of its message.
 */
export async function readErrorBody(body: Readable, signal: AbortSignal | null | undefined): Promise<BufferedBody> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      const piece = chunk.subarray(0, MAX_ERROR_BODY_BYTES - bytes);
      chunks.push(piece);
      bytes += piece.length;
      if (bytes >= MAX_ERROR_BODY_BYTES) {
        // Leaving the loop destroys the unfinished body (aborting its request); an error it may still emit is nobody's concern.
        body.on("error", () => {});
        break;
      }
    }
  } catch (err) {
    if (signal?.aborted) throw err;
  }
  return bufferedBody(Buffer.concat(chunks));
}

function bufferedBody(bytes: Buffer): BufferedBody {
  const body = Readable.from(bytes.length > 0 ? [bytes] : []) as BufferedBody;
  body.text = async () => bytes.toString("utf8");
  body.json = async () => JSON.parse(bytes.toString("utf8"));
  return body;
}
