import { MAX_ANSWER_BYTES } from "./bounded-read.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";
import { TextPieces } from "./text-pieces.js";

/** One Server-Sent Events frame: its `id:`, `event:` and joined `data:` lines. */
export interface SseFrame {
  id: string | null;
  event: string;
  data: string;
}

const LINE_END = /\r\n|\r|\n/g;

/**
 * The frames of an SSE body, as the EventSource rules read them: lines end in LF, CRLF
 * or CR; a blank line ends a frame; `:` lines are comments (heartbeats); one space after
 * the colon is dropped. A frame without data is not dispatched. `onActivity` is called for
 * every chunk received (a live connection), `onComment` for every comment line (a server's
 * heartbeat: it streams, though it has no event to send). A line, or a frame's `data:` lines,
 * longer than `maxChars` (an event that never ends) is a server `CliError`: no more is read.
 * Each chunk is scanned once, so a long line costs time in proportion to its length.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  {
    onActivity = () => {},
    onComment = () => {},
    maxChars = MAX_ANSWER_BYTES,
  }: { onActivity?: () => void; onComment?: () => void; maxChars?: number } = {},
): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  /** The current line so far (a line may span chunks). */
  const line = new TextPieces();
  /** The last line ended with a CR that ended its chunk: an LF starting the next is its CRLF. */
  let afterCr = false;
  let frame = emptyFrame();
  for await (const chunk of body) {
    onActivity();
    const text = decoder.decode(chunk, { stream: true });
    if (text === "") continue;
    let start: number = afterCr && text.startsWith("\n") ? 1 : 0;
    afterCr = false;
    for (;;) {
      LINE_END.lastIndex = start;
      const end = LINE_END.exec(text);
      if (!end) {
        line.push(text.slice(start));
        break;
      }
      line.push(text.slice(start, end.index));
      const read = line.take();
      start = end.index + end[0].length;
      afterCr = end[0] === "\r" && start === text.length;
      if (read === "") {
        if (frame.data !== null) yield { id: frame.id, event: frame.event || "message", data: frame.data.take() };
        frame = emptyFrame();
        continue;
      }
      if (read.startsWith(":")) {
        onComment();
        continue;
      }
      const colon = read.indexOf(":");
      const field = colon < 0 ? read : read.slice(0, colon);
      let value = colon < 0 ? "" : read.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") {
        frame.chars += read.length + end[0].length;
        if (frame.data === null) frame.data = new TextPieces();
        else frame.data.push("\n");
        frame.data.push(value);
      } else if (field === "event") frame.event = value;
      else if (field === "id" && !value.includes("\0")) frame.id = value;
    }
    if (line.length + frame.chars > maxChars) {
      throw new CliError(
        `the server sent an event of more than ${maxChars / (1024 * 1024)} Mi characters: is AGENT_URL an agent server?`,
        EXIT.server,
      );
    }
  }
}

/**
 * A frame being read: its data's lines joined by newlines (null before its first), and how
 * many characters those lines took, `data:` and line ends included (what its limit counts).
 */
function emptyFrame(): { id: string | null; event: string; data: TextPieces | null; chars: number } {
  return { id: null, event: "", data: null, chars: 0 };
}
