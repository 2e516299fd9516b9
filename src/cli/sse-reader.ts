/** One Server-Sent Events frame: its `id:`, `event:` and joined `data:` lines. */
export interface SseFrame {
  id: string | null;
  event: string;
  data: string;
}

/**
 * The frames of an SSE body, as the EventSource rules read them: lines end in LF, CRLF
 * or CR; a blank line ends a frame; `:` lines are comments (heartbeats); one space after
 * the colon is dropped. A frame without data is not dispatched. `onActivity` is called for
 * every chunk received, comments included (a live connection).
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  onActivity: () => void = () => {},
): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buffer = "";
  let frame = emptyFrame();
  for await (const chunk of body) {
    onActivity();
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const end = buffer.search(/\r\n|\r|\n/);
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (end < 0 || (end === buffer.length - 1 && buffer[end] === "\r")) break;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
      if (line === "") {
        if (frame.data !== null) yield { id: frame.id, event: frame.event || "message", data: frame.data };
        frame = emptyFrame();
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") frame.data = frame.data === null ? value : `${frame.data}\n${value}`;
      else if (field === "event") frame.event = value;
      else if (field === "id" && !value.includes("\0")) frame.id = value;
    }
  }
}

function emptyFrame(): { id: string | null; event: string; data: string | null } {
  return { id: null, event: "", data: null };
}
