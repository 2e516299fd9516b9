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
  /** Output stopped (Ctrl-S): what is written meanwhile, in order, and who waits for `start`. */
  #stopped: { writes: (() => void)[]; started: Promise<void>; start: () => void } | null = null;

  /** `showText` false: the answer's text is not written (stdout carries something else). */
  constructor(
    readonly stdout: OutStream,
    readonly stderr: OutStream,
    private readonly showText = true,
  ) {}

  /**
   * Stops the output, as a terminal's Ctrl-S does: after a note saying so, nothing is written
   * until `start`. Whoever shows the run's events waits on `flowing` (so they wait at the
   * server, not in this process's memory); the rest waits here.
   */
  stop(): void {
    if (this.#stopped) return;
    this.note("[output] stopped (Ctrl-S): Ctrl-Q goes on");
    let start: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      start = resolve;
    });
    this.#stopped = { writes: [], started, start };
  }

  /** Goes on after `stop` (Ctrl-Q): what waited is written, in order. */
  start(): void {
    const stopped = this.#stopped;
    if (!stopped) return;
    this.#stopped = null;
    for (const write of stopped.writes) write();
    stopped.start();
  }

  /** Resolves once the output is not stopped. */
  flowing(): Promise<void> {
    return this.#stopped?.started ?? Promise.resolve();
  }

  /** Writes answer text as it is (control characters escaped on a terminal). */
  text(text: string): void {
    if (text === "" || !this.showText) return;
    if (this.#stopped) {
      this.#stopped.writes.push(() => this.text(text));
      return;
    }
    this.stdout.write(this.stdout.isTTY ? printable(text, { keepLines: true }) : text);
    this.#midLine = !text.endsWith("\n");
  }

  /** Ends the answer's current line, if one is open. */
  endLine(): void {
    if (this.#stopped) {
      this.#stopped.writes.push(() => this.endLine());
      return;
    }
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

  /**
   * A line on stderr. Its control characters are escaped (newlines and tabs kept), whatever it
   * quotes: a string of the server that a caller forgot to escape cannot drive the terminal.
   */
  note(line: string): void {
    if (this.#stopped) {
      this.#stopped.writes.push(() => this.note(line));
      return;
    }
    if (this.#held) {
      this.#held.push(line);
      return;
    }
    const shared = this.stdout.isTTY && this.stderr.isTTY;
    this.stderr.write(`${shared && this.#midLine ? "\n" : ""}${printable(line, { keepLines: true })}\n`);
    if (shared) this.#midLine = false;
  }
}
