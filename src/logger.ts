import { writeSync } from "node:fs";
import pino, { type DestinationStream, type Logger } from "pino";
import { logLineRedactor } from "./log-line-redact.js";

/** How long one log line may wait for a full pipe (EAGAIN) before it is dropped. */
const MAX_WAIT_PER_LINE_MS = 100;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Standard output as a log destination that can never stall the server for long: each line
 * is written at once (as pino's own synchronous destination does). A full pipe (EAGAIN, on a
 * non-blocking descriptor) is waited for at most MAX_WAIT_PER_LINE_MS, then the line is
 * dropped; a reader that went away (EPIPE, EBADF) ends logging. pino's destination retries
 * such errors for ever, which froze the event loop, and at exit the shutdown with it. A line
 * cut short is ended with a newline before the next one, so no two lines run together.
 */
export function stdoutDestination({
  fd = 1,
  write = writeSync,
}: {
  fd?: number;
  /** How bytes are written (fs.writeSync; replaced in tests). */
  write?: (fd: number, data: Uint8Array) => number;
} = {}): DestinationStream {
  let broken = false;
  let cut = false;
  return {
    write(line: string) {
      if (broken) return;
      const whole = Buffer.from(cut ? `\n${line}` : line);
      let rest = whole;
      cut = false;
      const deadline = Date.now() + MAX_WAIT_PER_LINE_MS;
      while (rest.length > 0) {
        try {
          rest = rest.subarray(write(fd, rest));
        } catch (err) {
          const code = (err as { code?: unknown }).code;
          if (code === "EAGAIN" && Date.now() < deadline) {
            Atomics.wait(pause, 0, 0, 5);
            continue;
          }
          if (code === "EPIPE" || code === "EBADF") broken = true;
          else cut = rest.length < whole.length;
          return;
        }
      }
    },
  };
}

/**
 * JSON logs on standard output; credentials never reach them: the Authorization header by
 * path, and each of `secrets` (API keys) in every encoding secretRedactor knows, wherever it
 * appears within a string of a line (a value or a field name; see logLineRedactor), so that
 * every line stays valid JSON.
 */
export function createLogger({
  level,
  destination = stdoutDestination(),
  secrets = [],
}: {
  level: string;
  destination?: DestinationStream;
  secrets?: readonly string[];
}): Logger {
  const redactSecrets = logLineRedactor(secrets);
  return pino(
    {
      level,
      ...(secrets.length ? { hooks: { streamWrite: redactSecrets } } : {}),
      redact: {
        paths: ["req.headers.authorization", "headers.authorization", "authorization", "apiKey", "*.apiKey"],
        censor: "[redacted]",
      },
    },
    destination,
  );
}

/** The log lines a part of the server writes with its own bindings. */
export type LineLogger = Pick<Logger, "info" | "warn" | "error">;

/**
 * `logger.child(bindings)`, made at the first line written at an enabled level: making a pino
 * child serializes (and redacts) its bindings at once, which a run's logger, made for every
 * run, need not pay where its lines are dropped (a LOG_LEVEL of warn or above drops a plain
 * run's two info lines).
 */
export function lazyChild(logger: Logger, bindings: Record<string, unknown>): LineLogger {
  let child: Logger | null = null;
  const at =
    (level: "info" | "warn" | "error"): Logger["info"] =>
    (...args: Parameters<Logger["info"]>) => {
      if (!logger.isLevelEnabled(level)) return;
      child ??= logger.child(bindings);
      child[level](...args);
    };
  return { info: at("info"), warn: at("warn"), error: at("error") };
}
