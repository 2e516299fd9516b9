import { isHighSurrogate } from "../utf16.js";
export interface LineWindowOptions {
  /** First line to keep, 1-based. */
  startLine: number;
  /** Last line to keep, inclusive; Infinity for "to the end". */
  endLine: number;
  /** Stop (as truncated) rather than keep more than this many lines… */
  maxLines: number;
  /** …or more than this many UTF-8 bytes of formatted output. */
  maxBytes: number;
  /** Longer lines are kept cut to this many characters (code points, never half of one), with a marker. */
  maxLineChars: number;
}

const CARRIAGE_RETURN = 0x0d;

/**
 * The characters (code points) of `text` from `from` to `to`, both on character boundaries.
 * Decoded text holds no lone surrogate (invalid bytes become U+FFFD), so each high surrogate
 * starts a pair of two units.
 */
function countChars(text: string, from: number, to: number): number {
  let chars = to - from;
  for (let at = from; at < to; at++) if (isHighSurrogate(text.charCodeAt(at))) chars--;
  return chars;
}

/** How a line ended: `\r\n`, `\n`, at the end of the input, or cut short by a read limit. */
type LineEnd = "crlf" | "lf" | "end" | "cut";

/**
 * Collects a window of numbered lines from text fed in arbitrary chunks (each made of whole
 * characters, as a StringDecoder gives them), holding in memory only the kept lines (each at
 * most `maxLineChars` characters), whatever the size of the input or of any single line.
 * A line ends at `\n`; a `\r` right before it is part of the line end, not of the line's text
 * (neither kept nor counted toward `maxLineChars`), also when the two come in two chunks. Any
 * other `\r` is text. `push` returns false once no more input is needed.
 */
export class LineWindow {
  /** The kept lines, formatted `<number>\t<text>`. */
  readonly lines: string[] = [];
  /** Why collection stopped early: the window's end was reached, or a cap was hit. */
  stoppedBy: "range" | "cap" | null = null;
  /** How many kept lines were cut to `maxLineChars`. */
  cutLines = 0;
  firstKept = 0;
  lastKept = 0;
  /** The numbers of the kept lines that ended `\r\n`, in order. */
  readonly crlfLines: number[] = [];
  /** How many kept lines ended with a lone `\n`. */
  lfLines = 0;
  private lineNo = 1;
  private partial = "";
  /** Characters in `partial`. */
  private partialChars = 0;
  /** Characters of the line in progress left out of `partial` (counted only in the window). */
  private leftOut = 0;
  /** UTF-16 units of the line in progress, in the window or not: whether it has begun. */
  private partialLength = 0;
  private bytes = 0;
  /** The last chunk ended with a `\r` not yet given to the line: a line end if the next begins with `\n`. */
  private heldReturn = false;

  constructor(private readonly options: LineWindowOptions) {}

  push(text: string): boolean {
    if (this.stoppedBy) return false;
    if (text === "") return true;
    let crlf = false;
    if (this.heldReturn) {
      this.heldReturn = false;
      crlf = text.startsWith("\n");
      if (!crlf) this.append("\r", 0, 1);
    }
    let from = 0;
    for (;;) {
      const newline = text.indexOf("\n", from);
      let to = newline === -1 ? text.length : newline;
      if (to > from && text.charCodeAt(to - 1) === CARRIAGE_RETURN) {
        to--;
        if (newline === -1) this.heldReturn = true;
        else crlf = true;
      }
      this.append(text, from, to);
      if (newline === -1) return true;
      this.finishLine(crlf ? "crlf" : "lf");
      if (this.stoppedBy) return false;
      from = newline + 1;
      crlf = false;
    }
  }

  /** Call at end of input; returns the total number of lines (meaningful only if nothing stopped early). */
  end(): number {
    // A \r ending the input is no line end: it is text of the last line.
    if (this.heldReturn && !this.stoppedBy) this.append("\r", 0, 1);
    this.heldReturn = false;
    if (!this.stoppedBy && this.partialLength > 0) this.finishLine("end");
    return this.lineNo - 1;
  }

  /**
   * Call instead of `end` when input stops before the text's end (a read limit): the line in
   * progress, if in the window and begun, is kept marked as not read to its end. Returns the
   * number of that line, the last one the input reached.
   */
  cutShort(): number {
    const reached = this.lineNo;
    if (this.heldReturn) {
      // Maybe the first half of a line end read only in part: the line has begun, the \r is not shown.
      this.heldReturn = false;
      this.partialLength++;
    }
    if (!this.stoppedBy && this.partialLength > 0) this.finishLine("cut");
    return reached;
  }

  private inWindow(): boolean {
    return this.lineNo >= this.options.startLine && this.lineNo <= this.options.endLine;
  }

  private append(text: string, from: number, to: number): void {
    this.partialLength += to - from;
    if (!this.inWindow()) return;
    let at = from;
    while (at < to && this.partialChars < this.options.maxLineChars) {
      at += isHighSurrogate(text.charCodeAt(at)) ? 2 : 1;
      this.partialChars++;
    }
    this.partial += text.slice(from, at);
    if (at < to) this.leftOut += countChars(text, at, to);
  }

  /** `cut`: the line goes on past the input; `extra` then counts only the characters read. */
  private finishLine(ending: LineEnd): void {
    const unfinished = ending === "cut";
    if (this.inWindow()) {
      const extra = this.leftOut;
      const text =
        extra > 0
          ? `${this.partial}… [line cut: ${unfinished ? "at least " : ""}${extra} more character${extra === 1 ? "" : "s"}]`
          : unfinished
            ? `${this.partial}… [line cut: not read to its end]`
            : this.partial;
      const formatted = `${String(this.lineNo).padStart(6)}\t${text}`;
      const size = Buffer.byteLength(formatted) + 1;
      if (this.lines.length >= this.options.maxLines || this.bytes + size > this.options.maxBytes) {
        this.stoppedBy = "cap";
        return;
      }
      this.lines.push(formatted);
      this.bytes += size;
      if (extra > 0) this.cutLines++;
      if (ending === "crlf") this.crlfLines.push(this.lineNo);
      else if (ending === "lf") this.lfLines++;
      if (this.firstKept === 0) this.firstKept = this.lineNo;
      this.lastKept = this.lineNo;
      if (this.lineNo >= this.options.endLine) this.stoppedBy = "range";
    }
    this.lineNo++;
    this.partial = "";
    this.partialChars = 0;
    this.leftOut = 0;
    this.partialLength = 0;
  }
}
