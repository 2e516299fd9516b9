/**
 * How much of one answer of the server the client reads by default (AGENT_MAX_ANSWER_MIB sets
 * it): a JSON body (in bytes) or one event of a stream (in characters). An agent server's
 * largest answers and events echo a run's input, which its BODY_LIMIT_BYTES (at most 100 MiB)
 * bounds: past this, it is not an agent server, and what it sends is not kept.
 */
export const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

/** A refusal's error envelope is a line or two: more of its body is not read. */
export const MAX_REFUSAL_BYTES = 1024 * 1024;

/** `max` bytes in words, e.g. "128 MiB". */
export const mebibytes = (max: number): string => `${max / (1024 * 1024)} MiB`;

/**
 * A body as UTF-8 text (a BOM dropped, as `Response.text()` does), or null when it is longer
 * than `max` bytes: then reading stops there (the body is cancelled) and nothing is kept.
 */
export async function readBoundedText(body: ReadableStream<Uint8Array> | null, max: number): Promise<string | null> {
  if (!body) return "";
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    // Leaving the loop cancels the body.
    if (bytes > max) return null;
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks, bytes));
}
