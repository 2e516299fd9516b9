import { Writable } from "node:stream";
import type { Logger } from "pino";
import { createLogger } from "../../src/logger.js";

/** The server's own logger (info level) writing into `lines`, for tests that read the log. */
export function capturedLogs(): { lines: string[]; logger: Logger } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, logger: createLogger({ level: "info", destination: sink }) };
}
