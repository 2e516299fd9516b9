import { printable } from "./printable.js";

/** A stream the client writes to, with what it needs to know about it. */
export interface OutStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * The client's two outputs: the answer on stdout, one-line notes on stderr. When both are
 * the same terminal, a note never lands in the middle of a line of the answer.
 */
export class Outputs {
  #midLine = false;
  #held: string[] | null = null;

  /** `showText` false: the answer's text is not written (stdout carries something else). */
  constructor(
    readonly stdout: OutStream,
    readonly stderr: OutStream,
    private readonly showText = true,
  ) {}

  /** Writes answer text as it is (control characters escaped on a terminal). */
  text(text: string): void {
    if (text === "" || !this.showText) return;
    this.stdout.write(this.stdout.isTTY ? printable(text, { keepLines: true }) : text);
    this.#midLine = !text.endsWith("\n");
  }

  /** Ends the answer's current line, if one is open. */
  endLine(): void {
    if (this.#midLine) this.stdout.write("\n");
    this.#midLine = false;
  }

  /** While a question is open on the terminal, notes wait under it until `release`. */
  hold(): void {
    this.#held ??= [];
  }

  release(): void {
    const held = this.#held ?? [];
    this.#held = null;
    for (const line of held) this.note(line);
  }

  /** A line on stderr. */
  note(line: string): void {
    if (this.#held) {
      this.#held.push(line);
      return;
    }
    const shared = this.stdout.isTTY && this.stderr.isTTY;
    this.stderr.write(`${shared && this.#midLine ? "\n" : ""}${line}\n`);
    if (shared) this.#midLine = false;
  }
}
