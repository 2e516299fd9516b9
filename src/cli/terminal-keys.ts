import { readFileSync } from "node:fs";
import { PassThrough, type Readable } from "node:stream";

/** A terminal's input (process.stdin on a terminal): what the keys need of it. */
export type TtyInput = NodeJS.ReadableStream & { setRawMode(raw: boolean): unknown };

const CTRL_C = 0x03;
const CTRL_Q = 0x11;
const CTRL_S = 0x13;
const CTRL_Z = 0x1a;
const CTRL_BACKSLASH = 0x1c;
/** The keys handled here, never typed into a question. */
const CONTROL_KEYS: ReadonlySet<number> = new Set([CTRL_C, CTRL_Q, CTRL_S, CTRL_Z, CTRL_BACKSLASH]);

/**
 * The keyboard of a run that may ask questions. From `start` to `stop` the terminal is in
 * raw mode and read all the time, so each key is seen as it is typed: keys go to the
 * question that is open (`open`), and are dropped as they arrive while none is, so that a
 * question is only ever answered by keys typed after it was shown (what sudo gets by
 * flushing the terminal's input before it asks). Each question starts with an empty line.
 * `onIgnored` is called the first time keys are dropped. Ctrl-C is `onInterrupt`, Ctrl-Z
 * `suspend` (the process stopped in cooked mode, raw again when continued) and Ctrl-\ `quit`
 * (the terminal given back in cooked mode first), question or not: raw mode keeps the
 * terminal from sending SIGINT, SIGTSTP and SIGQUIT itself. It also turns off the terminal's
 * flow control, so Ctrl-S is `stopOutput` and Ctrl-Q `startOutput`, and Ctrl-C, Ctrl-Z and
 * Ctrl-\ start the output first, as a terminal does when such a key sends its signal.
 * A process in the background of its terminal (started with `&`, or continued with `bg`) is
 * stopped by the system if it sets raw mode or reads the terminal: the keys wait, checking
 * every FOREGROUND_POLL_MS, until it is in the foreground (`fg`), and the run goes on meanwhile.
 */
export class TerminalKeys {
  #started = false;
  /** While in the background: the check that takes the terminal once in the foreground. */
  #waiting: NodeJS.Timeout | null = null;
  /** Raw mode set and the terminal read (not while waiting for the foreground). */
  #raw = false;
  #question: { keys: PassThrough; redraw: () => void } | null = null;
  #toldIgnored = false;

  constructor(
    private readonly deps: {
      input: TtyInput;
      onInterrupt: () => void;
      onIgnored: () => void;
      suspend?: () => void;
      quit?: () => void;
      stopOutput?: () => void;
      startOutput?: () => void;
      /** Whether the process may use its terminal now (see inForeground). */
      inForeground?: () => boolean;
    },
  ) {}

  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#takeTerminal();
  }

  /** Gives the terminal back as it was (cooked mode) and stops reading it: nothing keeps the process alive. */
  stop(): void {
    if (!this.#started) return;
    this.#started = false;
    this.#question = null;
    this.#stopWaiting();
    this.#giveTerminal();
  }

  /** Raw mode and reading, at once in the foreground; else once the process is brought there. */
  #takeTerminal(): void {
    if (this.#raw || this.#waiting) return;
    const foreground = this.deps.inForeground ?? inForeground;
    if (!foreground()) {
      this.#waiting = setInterval(() => {
        if (!foreground()) return;
        this.#stopWaiting();
        this.#takeTerminal();
        this.#question?.redraw();
      }, FOREGROUND_POLL_MS).unref();
      return;
    }
    this.#raw = true;
    this.deps.input.setRawMode(true);
    this.deps.input.on("data", this.#onData);
    this.deps.input.resume();
  }

  /** Cooked mode again, and the terminal no longer read (nothing when it was not taken). */
  #giveTerminal(): void {
    if (!this.#raw) return;
    this.#raw = false;
    this.deps.input.off("data", this.#onData);
    this.deps.input.pause();
    this.deps.input.setRawMode(false);
  }

  #stopWaiting(): void {
    if (this.#waiting) clearInterval(this.#waiting);
    this.#waiting = null;
  }

  /**
   * A question is shown: the keys typed from now until `close` (or the next `open`).
   * `redraw` shows it again, after the process was suspended and continued.
   */
  open(redraw: () => void = () => {}): Readable {
    const keys = new PassThrough();
    this.#question = { keys, redraw };
    return keys;
  }

  /** The question answered or withdrawn: its keys end here, a line half typed with them. */
  close(keys: Readable): void {
    if (this.#question?.keys === keys) this.#question = null;
  }

  readonly #onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    // None of these bytes occurs inside a UTF-8 sequence: the chunk is split on them as it is.
    let from = 0;
    for (let i = 0; i <= bytes.length; i++) {
      const byte = bytes[i];
      if (byte !== undefined && !CONTROL_KEYS.has(byte)) continue;
      if (i > from) this.#route(bytes.subarray(from, i));
      from = i + 1;
      if (byte === CTRL_S) this.deps.stopOutput?.();
      else if (byte !== undefined) this.deps.startOutput?.();
      if (byte === CTRL_C) this.deps.onInterrupt();
      if (byte === CTRL_Z) this.#suspend();
      if (byte === CTRL_BACKSLASH) {
        this.stop();
        (this.deps.quit ?? quitThisProcess)();
        return;
      }
    }
  };

  #route(keys: Buffer): void {
    if (this.#question) {
      this.#question.keys.write(keys);
      return;
    }
    if (this.#toldIgnored) return;
    this.#toldIgnored = true;
    this.deps.onIgnored();
  }

  #suspend(): void {
    const { suspend = stopThisProcess } = this.deps;
    this.#giveTerminal();
    suspend();
    if (!this.#started) return;
    // Continued in the foreground (`fg`), or in the background (`bg`): raw again once it may.
    this.#takeTerminal();
    if (this.#raw) this.#question?.redraw();
  }
}

/** How often a process in the background checks whether it was brought to the foreground. */
export const FOREGROUND_POLL_MS = 250;

/**
 * Whether this process may use its terminal: it has none (nothing to stop it), or its process
 * group is the terminal's foreground one. Read from /proc/self/stat (Linux); true where that
 * cannot be read.
 */
export function inForeground(): boolean {
  let stat: string;
  try {
    stat = readFileSync("/proc/self/stat", "utf8");
  } catch {
    return true;
  }
  // After the command's name (in parentheses, which may hold anything): state ppid pgrp session tty_nr tpgid.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const [pgrp, ttyNr, tpgid] = [fields[2], fields[4], fields[5]];
  return ttyNr === "0" || tpgid === "-1" || tpgid === pgrp;
}

/**
 * Stops the process as Ctrl-Z does in cooked mode: the terminal stops its whole foreground
 * process group, so a parent that runs the client (`npx`, `sh -c`) stops with it and the shell
 * gets the terminal back (stopping this process alone left the shell waiting on the running
 * parent, the terminal frozen). Returns once continued (`fg`): a signal a process sends its own
 * group is taken before `kill` returns. The kernel drops it when no shell with job control
 * could continue the group (an orphaned process group).
 */
function stopThisProcess(): void {
  process.kill(0, "SIGTSTP");
}

/**
 * Quits as Ctrl-\ does in cooked mode: SIGQUIT to the terminal's foreground process group
 * (this process and a parent that runs it), whose default action ends each of them. The run
 * goes on at the server, as after the terminal's own Ctrl-\.
 */
function quitThisProcess(): void {
  process.kill(0, "SIGQUIT");
}
