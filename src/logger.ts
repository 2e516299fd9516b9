import { writeSync } from "node:fs";
import pino, { type DestinationStream, type Logger } from "pino";

/**
 * Standard output as a log destination that can never stall the server: each line is written
 * at once (as pino's own synchronous destination does), but a reader that went away (EPIPE)
 * or any other write error drops the logs instead of retrying for ever, which would freeze
 * the event loop, and at exit the shutdown with it. A pipe that is merely full (EAGAIN, on a
 * non-blocking descriptor) loses that line.
 */
export function stdoutDestination(fd = 1): DestinationStream {
  let broken = false;
  return {
    write(line: string) {
      if (broken) return;
      let rest = Buffer.from(line);
      try {
        while (rest.length > 0) rest = rest.subarray(writeSync(fd, rest));
      } catch (err) {
        if ((err as { code?: unknown }).code !== "EAGAIN") broken = true;
      }
    },
  };
}

/** JSON logs on standard output; credentials never reach them. */
export function createLogger({
  level,
  destination = stdoutDestination(),
}: {
  level: string;
  destination?: DestinationStream;
}): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ["req.headers.authorization", "headers.authorization", "authorization", "apiKey", "*.apiKey"],
        censor: "[redacted]",
      },
    },
    destination,
  );
}
